"""The importers' built-in copies and templating, pinned to upstream.

(1) OpenAI Evals' modelgraded specs: scoreboard's built-in copies (importers/openai_evals_specs*.py)
are pinned, file by file and field by field, to openai/evals' evals/registry/modelgraded/*.yaml at
commit 4bfc1f58a821685acb40bb28ba54131740535046 (the values below were read from that commit; the
test fetches nothing). And what ModelBasedClassify does with them (evals/elsuite/modelgraded/
classify.py, classify_utils.py, base.py at that commit): the judge's prompt is filled in by
`PromptFn(...)(n=multicomp_n, **format_kwargs)`, so a spec's `{n}` (diversity, best) is the number of
completions judged, and a sample giving `n` is a TypeError; ModelGradedSpec requires
`input_outputs`; `get_choice(..., mg.eval_type or eval_type, ...)` stops on a None eval_type.

(2) promptfoo's http provider headers (src/providers/http.ts getHeaders: each header value rendered
by Nunjucks at call time, whose `env` global is the process environment under the config's env:).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

UPSTREAM_FILE_SHA256 = {  # sha256 of each upstream file's bytes
    "arithmetic-expression.yaml": "c15f72947be21624a08d6af0d6258a756adeb202cac9867e920b29c88cf50296",
    "battle.yaml": "1b284ad99a62cfff198cc0a569ded99cd8302a204c94d4d25e5a91a17d25305f",
    "best.yaml": "13eb0c68d39816407482f7797690a30f1a839b8c68029759c25065ff46fed079",
    "closedqa.yaml": "4b9cc293fa7b261ede7d03e7e71bcb7749c5d350aa464e3cb336be15c3a6b0cb",
    "diversity.yaml": "ef6601511e5b23b3088e097bed4f23525bce53e7d586b201f50448315d678a0b",
    "fact.yaml": "295a3f3c3ad02511b5dd5378be4bdbb187822111df292f49a25d0f27b076d0f6",
    "humor.yaml": "0d1624b2a76ed048a109bf67f6394f16ddc852f7f07f3fe8c540bee36b2b9694",
    "iambic_pentameter.yaml": "70e6513d1e6ce7a0fed8e357c98a833f19336343088dd72a65e0e701e5f3ea22",
    "keywords.yaml": "0779b539d8548cb182d63d410baafa43a424bc0bd43f16fe009914b8651dde48",
    "onomatopoeia.yaml": "ee1b1d0a5d299a83dcea46922d751b3eba569f870a03dd94ca225806d8ba973f",
    "possible.yaml": "691b1c1e5cce7444436a563bbac9979ee3b72c610c54f41a083713f954cc43e9",
    "regression-equation.yaml": "4414ff273f0bb4529de7eaa9a1fd009f220a8e511fce8701b50fea528e5c1476",
    "research-question-extraction.yaml": "38c8efbbaa11a19398c5d209f0dc515f4212969eea33cde4ef2dbdd9ef85900b",
    "rhyming.yaml": "be13bbacd8a34da09ce72fa3c7918e265de2d7a6f060ff1ed2eae441ab0b317b",
    "security.yaml": "6b4d45828e3ef95dbb0b922ceab4ef2004d21098fe6d296c7b287997cd94ead0",
    "singlestore.yaml": "c50f8bded77d634c80193fafe06ebf6bcad92e23eab9747a791c2cd2224fe2d7",
    "sql.yaml": "68de9b9f61934d1c0dcb939450329aa7a0ca5f164150e13c221247ad68082a82",
    "translation.yaml": "0f6b9c2ac235ff4e5e429a00a153f9baa75b6efeaea47e4993b2d9b933e46e10",
}
# spec name -> (its file, every field as yaml.safe_load reads it; the prompt as its sha256)
YN, YES_NO, YNU = {"Y": 1.0, "N": 0.0}, ["Yes", "No"], ["Yes", "No", "Unsure"]
YNU_SCORES, IO = {"Yes": 1.0, "No": 0.0, "Unsure": 0.5}, {"input": "completion"}
CORRECT = {"choice_scores": {"Correct": 1.0, "Incorrect": 0.0}, "choice_strings": ["Correct", "Incorrect"]}
UPSTREAM_SPECS = {
    "arithmetic-expression": ("arithmetic-expression.yaml", {"choice_scores": YN, "choice_strings": "YN", "input_outputs": IO, "prompt_sha256": "515d65e0685817860c1d5676cd23f269de7b7ae848065947a4ea0b0fc0dbf64f"}),
    "battle": ("battle.yaml", {"choice_scores": {"Yes": 1.0, "No": 0.0}, "choice_strings": YES_NO, "input_outputs": {"input1": "completion1", "input2": "completion2"}, "prompt_sha256": "2d1e4264c7f12291ebed419a2f674653fabe4001272c18fb21b1ff33361ceca8"}),
    "best": ("best.yaml", {"choice_strings": "from_n", "input_outputs": IO, "output_template": "{i}. {output}\n", "prompt_sha256": "1d5204b795f2e0ee61225442eba60fbdbc8dc9eb99c8d40679f5f7b68107f335"}),
    "closedqa": ("closedqa.yaml", {"choice_scores": YN, "choice_strings": "YN", "eval_type": "cot_classify", "input_outputs": IO, "prompt_sha256": "26478276bd183f8222157cde0b8512b8468706e381bb16318f6feae1e6deb96d"}),
    # upstream's diversity DOES have choice_scores (Yes 1.0, No 0.0)
    "diversity": ("diversity.yaml", {"choice_scores": {"Yes": 1.0, "No": 0.0}, "choice_strings": YES_NO, "input_outputs": IO, "output_template": "{i}. {output}\n", "prompt_sha256": "e14b16991a31b8163d1109f85b88167479be4b9085b563d10ce3246e5c8f5590"}),
    "fact": ("fact.yaml", {"choice_strings": "ABCDE", "input_outputs": IO, "prompt_sha256": "bc62592f49f1b1bcb37dd761aac212d065c941eaa3e49510638ade05183fe8a3"}),
    "humor": ("humor.yaml", {"choice_scores": YNU_SCORES, "choice_strings": YNU, "input_outputs": IO, "prompt_sha256": "28c916c0c377a83785064c15ef2ae38b085a42b6a896f4e49a157018f41207fd"}),
    "humor_out_message": ("humor.yaml", {"choice_scores": YNU_SCORES, "choice_strings": YNU, "format_type": "out_message", "input_outputs": IO, "prompt_sha256": "8788b7c4d55b8f924c4087720501e96f1de3dc10a7354d139112d9487b173443"}),
    "humor_likert": ("humor.yaml", {"choice_scores": "from_strings", "choice_strings": "12345", "input_outputs": IO, "prompt_sha256": "3f574c851f3329f81ab881275949c7bcc9129b5b5d365e68257e5706e8227114"}),
    "humor_jp": ("humor.yaml", {"choice_scores": "from_strings", "choice_strings": "12345", "input_outputs": IO, "prompt_sha256": "fc048fcb0702b9448313a41eb9ea761e9bf54ed17d019b846834f28d334dd48d"}),
    "iambic_pentameter": ("iambic_pentameter.yaml", {"choice_scores": YNU_SCORES, "choice_strings": YNU, "input_outputs": IO, "prompt_sha256": "d90f705bca86eaf9867bf30a5eae1daca9cc81e9c9ff2025536255150119417d"}),
    # keywords.yaml names `input` twice in input_outputs; yaml.safe_load keeps the last
    "seo_keywords": ("keywords.yaml", {"choice_scores": "from_strings", "choice_strings": "0123", "input_outputs": IO, "prompt_sha256": "663849198b33315cce7f5bbec985568574829664cd2f3e1664c8528457e80306"}),
    "onomatopoeia": ("onomatopoeia.yaml", {"choice_scores": {"A": 1.0, "B": 0.8, "C": 0.6, "D": 0.4, "E": 0.2, "F": 0.0}, "choice_strings": "ABCDEF", "input_outputs": IO, "prompt_sha256": "a7f8e261efdf3434e6df2e31ea975791df31faf1dfd203252844211155ec605c"}),
    "possible": ("possible.yaml", {"choice_strings": "AB", "input_outputs": IO, "prompt_sha256": "bf64b3819d2345671b312d7812a7c55642203eb220292e1271b374941c4db90c"}),
    "regression-equation": ("regression-equation.yaml", {"choice_scores": YN, "choice_strings": "YN", "input_outputs": IO, "prompt_sha256": "3e0223fe754366d1d755c2536582aac63cb60dc033a12eeee7db4e2f8690fc33"}),
    "research-question-extraction": ("research-question-extraction.yaml", {"choice_scores": "from_strings", "choice_strings": "12345", "input_outputs": IO, "prompt_sha256": "f104e1d7cdf99962e2bf38ad6ee93de520d58ebc320a0ee8a95ff1b1be82758d"}),
    "rhyming": ("rhyming.yaml", {"choice_strings": "AB", "input_outputs": IO, "prompt_sha256": "316e1a5aaadaa3aae7970bbefa9171a0beeba09f6d1cdd616bc103b146a2929b"}),
    "security": ("security.yaml", {"choice_scores": YNU_SCORES, "choice_strings": YNU, "input_outputs": IO, "prompt_sha256": "739e975dc12a9a51d85f0c1c16776c0185bca021a6402d9b36ad9e70c8e8fcb5"}),
    "singlestore": ("singlestore.yaml", {**CORRECT, "input_outputs": IO, "prompt_sha256": "c52fae51ccc3b7f768c24fb461c6fa01bdc60c5862b6322641093394618b9b8e"}),
    "sql": ("sql.yaml", {**CORRECT, "input_outputs": IO, "prompt_sha256": "9ed5691e58d5a1af785edab1bdeded1e6ad51a6fc68e463e4e8a701e26dacbb9"}),
    "translation": ("translation.yaml", {"choice_scores": YN, "choice_strings": "YN", "eval_type": "cot_classify", "input_outputs": IO, "prompt_sha256": "e05eb8d87ab5b963543a11af3a8b294dce227765cc04e7baea7075966c9e21ad"}),
}


def scoreboard(args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd,
                          env={**os.environ, "SCOREBOARD_STORE": "none", **(env or {})},
                          capture_output=True, text=True, timeout=300, check=False)


# ---- (1) OpenAI Evals' built-in modelgraded specs ----------------------------------------------

def test_builtin_spec_files_are_upstreams_byte_for_byte():
    from scoreboard.importers.openai_evals_specs import FILES

    assert sorted(FILES) == sorted(UPSTREAM_FILE_SHA256)  # none missing, none invented
    for name, text in FILES.items():
        assert hashlib.sha256(text.encode("utf-8")).hexdigest() == UPSTREAM_FILE_SHA256[name], name


def test_builtin_specs_field_by_field():
    from scoreboard.importers.openai_evals_specs import FILES

    seen = {}
    for file, text in FILES.items():
        for spec_name, spec in yaml.safe_load(text).items():
            fields = {k: v for k, v in spec.items() if k != "prompt"}
            fields["prompt_sha256"] = hashlib.sha256(spec["prompt"].encode("utf-8")).hexdigest()
            seen[spec_name] = (file, fields)
    assert seen == UPSTREAM_SPECS
    # which give no score in OpenAI Evals (only counts/<choice>): fact, best, possible, rhyming
    assert sorted(n for n, (_, f) in UPSTREAM_SPECS.items() if "choice_scores" not in f) == [
        "best", "fact", "possible", "rhyming"]


ENTRY = "  class: evals.elsuite.modelgraded.classify:ModelBasedClassify\n  args: {samples_jsonl: q/s.jsonl, %s}\n"


def _import_evals(tmp: Path, entries: dict[str, str], samples: list[dict], specs: str | None = None):
    root = tmp / "registry"
    files = {"evals/e.yaml": "".join(f"{name}:\n" + ENTRY % args for name, args in entries.items()),
             "data/q/s.jsonl": "".join(json.dumps(s) + "\n" for s in samples)}
    if specs is not None:
        files["modelgraded/mine.yaml"] = specs
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    done = scoreboard(["import", "openai-evals", "registry/evals/e.yaml", "--output", "out"], tmp)
    assert done.returncode in (0, 3), done.stderr
    report = (tmp / "out" / "conversion-report.md").read_text()
    lines = (tmp / "out" / "cases.jsonl").read_text().splitlines() if (tmp / "out" / "cases.jsonl").exists() else []
    return done, report, [json.loads(line) for line in lines]


def test_diversity_n_is_the_number_of_completions(tmp_path):
    """diversity's prompt says `Are the following {n} texts diverse?`; OpenAI Evals fills {n} with
    multicomp_n (1 here). The import said the prompt names {n}, which nothing gives."""
    done, report, cases = _import_evals(
        tmp_path, {"div.dev.v0": "modelgraded_spec: diversity, eval_type: cot_classify"},
        [{"input": "Tell a joke"}])
    assert done.returncode == 0, report
    grader = cases[0]["graders"][0]["classify"]
    assert grader["prompt"].startswith("Are the following 1 texts diverse?\n\n{{ output }}\n\nFirst, write out")
    assert grader["choices"] == ["Yes", "No"] and grader["choice_scores"] == {"Yes": 1.0, "No": 0.0}
    assert "record_only" not in grader


def test_a_sample_or_spec_args_giving_n_is_not_converted(tmp_path):
    """PromptFn is called as evaluate(n=n, **format_kwargs): a sample field (or spec arg) `n` is
    a TypeError in OpenAI Evals, on every sample."""
    done, report, cases = _import_evals(
        tmp_path, {"a.dev.v0": "modelgraded_spec: closedqa, modelgraded_spec_args: {criteria: ok}",
                   "b.dev.v0": "modelgraded_spec: closedqa, modelgraded_spec_args: {criteria: ok, n: 3}"},
        [{"input": "q1", "n": 2}, {"input": "q2"}])
    assert done.returncode == 3
    assert "a.dev.v0 s.jsonl:1: the sample gives 'n'" in report
    assert "b.dev.v0: modelgraded_spec_args gives 'n'" in report
    assert len(cases) == 1 and "q2" in json.dumps(cases[0]["input"])


def test_a_spec_without_input_outputs_is_not_converted(tmp_path):
    """ModelGradedSpec requires input_outputs: OpenAI Evals cannot build the spec without it."""
    specs = "bare:\n  prompt: 'Judge {completion}'\n  choice_strings: AB\n"
    done, report, cases = _import_evals(tmp_path, {"a.dev.v0": "modelgraded_spec: bare, eval_type: classify"},
                                        [{"input": "q"}], specs)
    assert done.returncode == 3 and not cases
    assert "a.dev.v0: modelgraded spec 'bare' has no 'input_outputs' (OpenAI Evals requires it)" in report


def test_a_file_name_is_no_spec_name_and_the_report_says_which_is(tmp_path):
    done, report, _ = _import_evals(tmp_path, {"k.dev.v0": "modelgraded_spec: keywords, eval_type: classify"},
                                    [{"input": "q"}])
    assert done.returncode == 3
    assert "(its keywords.yaml holds 'seo_keywords')" in report


def test_no_eval_type_anywhere_is_noted(tmp_path):
    """get_choice(text, mg.eval_type or eval_type, ...) calls .startswith on it: with neither the
    entry's nor the spec's eval_type OpenAI Evals stops on every sample. closedqa's own
    eval_type (cot_classify) is enough."""
    done, report, cases = _import_evals(
        tmp_path, {"f.dev.v0": "modelgraded_spec: fact",
                   "c.dev.v0": "modelgraded_spec: closedqa, modelgraded_spec_args: {criteria: ok}"},
        [{"input": "q", "ideal": "a"}])
    assert len(cases) == 2
    assert "f.dev.v0: neither the entry nor spec 'fact' gives eval_type" in report
    assert "c.dev.v0: neither" not in report


# ---- (2) promptfoo http provider headers with {{ env.X }} --------------------------------------

PF_CONFIG = """prompts: ['Q: {{{{ q }}}}']
env:
  FIXED_TEAM: from-config
providers:
  - id: https
    label: svc
    config:
      url: {url}/generic
      method: post
      headers:
        Authorization: 'Bearer {{{{ env.PF_PROBE_TOKEN }}}}'
        X-Tight: '{{{{env.PF_PROBE_TIGHT}}}}'
        X-Quoted: "{{{{ env['PF_PROBE_TIGHT'] }}}}-q"
        X-Team: '{{{{ env.FIXED_TEAM }}}}'
        X-Plain: plain
      body: {{input: '{{{{ prompt }}}}'}}
      transformResponse: json.output
tests:
  - vars: {{q: hi}}
"""


def test_http_headers_from_the_environment_are_sent_from_the_environment(tmp_path):
    """promptfoo renders each header with Nunjucks when it calls the provider (http.ts getHeaders),
    `env` being the environment under the config's env:. The import listed such a provider as
    'its headers are templates' (not converted); now {{ env.X }} is the http subject's ${X}, read
    when the suite runs, and a name env: sets is its literal value."""
    from tests.servers.fake_provider import FakeProvider

    with FakeProvider() as srv:
        srv.set_default("generic", {"reply": lambda req: "echo " + req["input"]})
        (tmp_path / "c.yaml").write_text(PF_CONFIG.format(url=srv.base_url))
        done = scoreboard(["import", "promptfoo", "c.yaml", "--output", "out"], tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
        headers = suite["variants"]["svc"]["subject"]["headers"]
        assert headers == {"Authorization": "Bearer ${PF_PROBE_TOKEN}", "X-Tight": "${PF_PROBE_TIGHT}",
                           "X-Quoted": "${PF_PROBE_TIGHT}-q", "X-Team": "from-config", "X-Plain": "plain"}
        report = (tmp_path / "out" / "conversion-report.md").read_text()
        assert "${PF_PROBE_TOKEN}" in report and "PF_PROBE_TOKEN" not in report.split("## Converted")[0]
        secret = "s3cret-token-value"
        run = scoreboard(["run", "out/suite.yaml", "--output", "r.json"], tmp_path,
                         env={"PF_PROBE_TOKEN": secret, "PF_PROBE_TIGHT": "tight"})
        requests = [r for r in srv.requests if r["path"].endswith("/generic")]
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(requests) == 1
    sent = requests[0]["headers"]
    assert sent["authorization"] == f"Bearer {secret}" and sent["x-tight"] == "tight"
    assert sent["x-quoted"] == "tight-q" and sent["x-team"] == "from-config" and sent["x-plain"] == "plain"
    assert secret not in (tmp_path / "r.json").read_text()


def test_http_headers_that_cannot_be_sent_alike_are_listed(tmp_path):
    """A filter on the variable, a test var, or a literal ${X} (promptfoo sends it as written; the
    http subject would read a variable) stays not converted, each with its reason."""
    base = ("  - {{id: http, label: {label}, config: {{url: 'http://127.0.0.1:9/a', body: {{p: '{{{{prompt}}}}'}}, "
            "transformResponse: json.out, headers: {{X-A: \"{value}\"}}}}}}\n")
    rows = {"filtered": "{{ env.PF_PROBE_TOKEN | upper }}", "vars": "{{ q }}", "dollar": "cost ${HOME}"}
    (tmp_path / "c.yaml").write_text("prompts: [x]\nproviders:\n" + "".join(
        base.format(label=label, value=value) for label, value in rows.items()))
    done = scoreboard(["import", "promptfoo", "c.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 3
    report = (tmp_path / "out" / "conversion-report.md").read_text()
    assert "a filter on an environment variable is not converted" in report
    assert "its headers are templates" in report
    assert "holds ${HOME}, which promptfoo sends as written" in report
