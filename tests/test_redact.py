"""The one scrubber (scoreboard.redact): what it recognises of a credential, what it leaves
alone, and the command-line check for credentials written out in clear."""

from __future__ import annotations

import base64
import html
import json

import pytest

from scoreboard.redact import MASK, Secrets, credential_parts, literal_credentials, split_userinfo

KEY = "sk-live-0123456789abcdef"


def test_a_key_is_replaced_in_every_spelling_a_writer_gives_it():
    odd = 'pa"ss<wörd>&1'
    secrets = Secrets([f"Bearer {KEY}", odd])
    texts = [f"key {KEY}!", json.dumps({"m": f"got {odd}"}), json.dumps({"m": odd}, ensure_ascii=True),
             html.escape(f"<td>{odd}</td>"), "https://h/?k=pa%22ss%3Cw%C3%B6rd%3E%261"]
    for text in texts:
        out = secrets.scrub(text)
        assert KEY not in out and "ss<w" not in out and "ss&lt;w" not in out and "%3Cw" not in out, out
        assert MASK in out
    line = json.dumps({"error": f"bad {KEY}"}).encode()
    assert KEY.encode() not in secrets.scrub_bytes(line)
    assert json.loads(secrets.scrub_bytes(line)) == {"error": f"bad {MASK}"}


def test_short_values_and_scheme_words_are_not_secrets():
    secrets = Secrets(["none", "EMPTY", "dummy", ""])  # local servers' stand-in keys: ordinary words
    assert not secrets and secrets.scrub("none of it is EMPTY") == "none of it is EMPTY"
    assert Secrets(["Bearer " + KEY]).scrub("Bearer token please") == "Bearer token please"


def test_basic_credentials_give_up_their_password():
    header = "Basic " + base64.b64encode(b"alice:hunter2-hunter2").decode()
    assert {"alice:hunter2-hunter2", "hunter2-hunter2"} <= credential_parts(header)
    assert Secrets([header]).scrub("login alice:hunter2-hunter2 failed") == f"login {MASK} failed"


def test_scrub_value_copies_only_what_changes():
    secrets = Secrets([KEY])
    clean = {"a": ["x", {"b": 1}]}
    assert secrets.scrub_value(clean) is clean
    dirty = {"a": ["x", {"b": f"<{KEY}>"}], "n": 3}
    assert secrets.scrub_value(dirty) == {"a": ["x", {"b": f"<{MASK}>"}], "n": 3}
    assert dirty["a"][1]["b"] == f"<{KEY}>"  # the original is untouched


def test_url_userinfo_becomes_a_basic_header():
    url, header = split_userinfo("http://bob:s%40cret-pass@127.0.0.1:9/v1?x=1")
    assert url == "http://127.0.0.1:9/v1?x=1"
    assert base64.b64decode(header.split()[1]) == b"bob:s@cret-pass"
    assert split_userinfo("http://127.0.0.1/v1") == ("http://127.0.0.1/v1", None)


@pytest.mark.parametrize("flags,where", [
    ({"subject": json.dumps({"type": "openai", "headers": {"Authorization": f"Bearer {KEY}"}})},
     "subject.headers.Authorization"),
    ({"judge": {"type": "http", "url": "http://u:p@h/x", "output_path": "o"}}, "judge.url"),
    ({"vs_subject": {"type": "codex-cli", "env": {"MY_TOKEN": KEY}}}, "vs_subject.env.MY_TOKEN"),
    ({"subject": {"type": "openai", "headers": {"Authorization": "Bearer ${K}", "X-Team": "blue"}}}, None),
    ({"subject": "openai:gpt-4o", "cases": ["c.jsonl"], "max_tokens": 10}, None),
])
def test_credentials_written_out_on_the_command_line_are_found(flags, where):
    assert literal_credentials(flags) == where
