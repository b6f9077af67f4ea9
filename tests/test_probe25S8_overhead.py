"""Probe 25 (S8): per-call overhead of the command line. `main` builds its parser once a
process and reuses it; each call must still behave as a fresh one."""

from __future__ import annotations

import contextlib
import importlib
import io

import scoreboard.cli.store as store_command

cli_main = importlib.import_module("scoreboard.cli.main")  # scoreboard.cli.main is also the function


def _call(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main.main(argv)
        except SystemExit as exc:  # argparse's usage errors end with exit status 1
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_the_parser_is_built_once_and_each_call_is_a_fresh_one(monkeypatch):
    seen = []

    def fake_main(args):  # a command that changes what it was given
        seen.append((list(args.tag), args.replace))
        args.tag.append("added-by-the-command")
        return 0

    monkeypatch.setattr(store_command, "main", fake_main)  # looked up at each call, not when the parser was built
    assert _call(["store", "import", "r.json", "--tag", "a", "--replace"])[0] == 0
    first = cli_main._parser()[0]
    assert _call(["store", "import", "r.json"])[0] == 0  # no --tag: the default list, not the one changed above
    assert _call(["store", "import", "r.json"])[0] == 0
    assert cli_main._parser()[0] is first
    assert seen == [(["a"], True), ([], False), ([], False)]
    tag = next(a for p in cli_main._all_parsers(first) for a in p._actions if "--tag" in a.option_strings
               and a.default is not None)
    assert tag.default == []


def test_errors_and_help_are_the_same_on_every_call():
    for _ in range(2):
        code, _, err = _call(["rnu"])
        assert code == 1 and "invalid choice: 'rnu'" in err and "(did you mean run?)" in err
        code, _, err = _call(["run", "s.yaml", "--fail-undr", "1"])
        assert code == 1 and "scoreboard run: error" in err and "did you mean --fail-under?" in err
        code, out, _ = _call([])
        assert code == 1 and "COMMAND" in out


def test_build_parser_still_gives_a_new_parser():
    first, commands = cli_main.build_parser()
    second, _ = cli_main.build_parser()
    assert first is not second and first is not cli_main._parser()[0]
    assert commands["run"].__module__ == "scoreboard.cli.run"
