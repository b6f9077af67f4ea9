"""`scoreboard init [DIR]`: start a suite of your own in DIR (default `evals`): a suite file, a
case file and a Python function standing in for your system, which run as written (offline, no
key), with comments on pointing a variant at a model, an HTTP service or a program instead.

Nothing is overwritten: a DIR already holding one of the three files is refused (exit 1, the
file named) and nothing is written; a file that cannot be written leaves none of the three.
"""

from __future__ import annotations

import argparse

NAME = "init"
HELP = "start a suite of your own: a suite file, cases and a stand-in for your system, runnable as written"
DESCRIPTION = __doc__

SUITE = """\
# A scoreboard suite: the cases to run, the variants of your system to run them on, and how
# each output is graded. README: Cases, Graders, Subjects, Variants and suites.
#
#   scoreboard validate {where}/suite.yaml    check it (no model called)
#   scoreboard run {where}/suite.yaml         run it; the reports go to eval-results/{name}/
name: {name_yaml}
cases: cases.jsonl
# a case passes when its output contains its `expected` text
graders: [contains]
variants:
  # app.py's answer() stands in for your system: replace its body with a call to yours
  starter: {{subject: "python:app:answer", description: "app.py's answer()"}}
  # A model behind an OpenAI-compatible API (OPENAI_API_KEY in the environment), its prompt a
  # template of the case's input; two variants are compared case by case in every report:
  # gpt: {{subject: {{type: openai, model: gpt-4o-mini}}, prompt: "Answer in one sentence: {{{{ input }}}}"}}
  # A JSON service of yours, or a program given the input as its last argument:
  # service: {{subject: {{type: http, url: "http://127.0.0.1:9000/answer", body: {{question: "{{{{input}}}}"}}, output_path: answer}}}}
  # script: {{subject: "command:./answer.sh {{input}}"}}
"""

CASES = [
    {"id": "france", "input": "What is the capital of France?", "expected": "Paris"},
    {"id": "japan", "input": "What is the capital of Japan?", "expected": "Tokyo"},
    {"id": "kenya", "input": "What is the capital of Kenya?", "expected": "Nairobi"},
    {"id": "peru", "input": "What is the capital of Peru?", "expected": "Lima"},
    {"id": "canada", "input": "What is the capital of Canada?", "expected": "Ottawa"},
]

APP = '''\
"""The system under test, as scoreboard calls it (suite.yaml's `starter` variant): answer() gets a
case's input and returns the output that is graded. Replace its body with a call to your own
system, or point a variant of suite.yaml at a model or a service and delete this file."""

CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Kenya": "Nairobi", "Peru": "Lima"}


def answer(question: str) -> str:
    for country, capital in CAPITALS.items():
        if country in question:
            return f"The capital of {country} is {capital}."
    return "I do not know."  # the Canada case fails: a failure, as every report shows one
'''


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", default="evals", metavar="DIR",
                   help="the folder to write the suite in (default: evals; made if missing)")
    p.add_argument("--name", help="the suite's name, its reports' folder (default: DIR's name; letters, digits, "
                                  "'.', '_' and '-' kept, any other run of characters one '-')")


def main(args: argparse.Namespace) -> int:
    """Write DIR/suite.yaml, DIR/cases.jsonl and DIR/app.py, none of them over a file."""
    import contextlib
    import json
    from pathlib import Path

    from ..errors import ConfigError
    from ..words import safe_name

    folder = Path(args.dir)
    if folder.exists() and not folder.is_dir():
        raise ConfigError("is not a folder: give a folder to write the suite in", file=str(folder))
    name = safe_name(args.name if args.name is not None else folder.resolve().name, "evals")
    where = folder.as_posix()
    shown = where if where.isprintable() else "DIR"  # a comment line of the suite file stays one line
    # quoted: a name YAML would read as a number or a boolean (2024, yes) stays text
    files = {"suite.yaml": SUITE.format(where=shown, name=name, name_yaml=json.dumps(name, ensure_ascii=False)),
             "cases.jsonl": "".join(json.dumps(case) + "\n" for case in CASES),
             "app.py": APP}
    for file in files:
        if (folder / file).exists() or (folder / file).is_symlink():
            raise ConfigError("already exists: init writes no file over another (choose another folder)",
                              file=str(folder / file))
    written: list[Path] = []
    made = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for file, text in files.items():
            with open(folder / file, "x", encoding="utf-8") as handle:
                written.append(folder / file)
                handle.write(text)
    except OSError as exc:
        for path in written:  # none of the three, not some
            path.unlink(missing_ok=True)
        if made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise ConfigError(f"cannot be written there ({(exc.strerror or str(exc)).lower()}): choose another folder",
                          file=str(folder)) from None
    print(f"wrote {where}/suite.yaml, {where}/cases.jsonl and {where}/app.py")
    print(f"  scoreboard validate {where}/suite.yaml   # check it (no model called)")
    print(f"  scoreboard run {where}/suite.yaml        # run it: {len(CASES)} cases, reports in eval-results/{name}/")
    return 0
