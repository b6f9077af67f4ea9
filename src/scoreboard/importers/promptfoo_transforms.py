"""promptfoo's `transformVars`, run when the config is imported.

promptfoo runs a test's `options.transformVars` (else defaultTest's) once per test when an eval
starts (src/evaluator.ts prepareTestVariables), on the test's vars merged over defaultTest's and
before they are expanded into rows (generateVarCombinations): `transform(code, vars, {prompt:
{}, uuid}, true, 'vars')` (src/util/transform.ts), its returned object merged over the vars. A
Python file is called as runPython(file, fn or get_transform, [vars, context]).

It stays an import-time step, for two reasons in promptfoo's own order: its result decides how
many rows a test has (a returned list of strings expands into one row per value), while a
scoreboard plan fixes its cases, with their hashes, before any attempt runs; and one result is
shared by every prompt, provider and repeat of the test (one uuid), which a per-attempt step
would not keep (each variant would see its own vars, and the paired comparison would compare
different inputs). So the importer runs the same code (JavaScript by Node.js in a worker,
graders/node_pool.py; Python in a fresh interpreter; each under a timeout) and writes the
transformed vars into the cases; the conversion report says so, since code that reads files, the
clock or the uuid runs once at import rather than at each eval.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from .promptfoo_asserts import Context, Skip

TIMEOUT_S = 30.0


def transform_vars(value: Any, vars_: dict, ctx: Context, where: str) -> dict:
    """The vars after promptfoo's transformVars (raises Skip when it cannot run here)."""
    from .promptfoo_asserts import split_file_function, transform_spec

    context = {"prompt": {}, "uuid": str(uuid.uuid4())}
    if isinstance(value, str) and value.startswith("file://") and \
            split_file_function(value[len("file://"):])[0].lower().endswith(".py"):
        name, fn = split_file_function(value[len("file://"):])
        ctx.source.read_text(name, where)  # confined to the config's folder, like every file it names
        out = _run_python(ctx.source.folder / name, fn or "get_transform", vars_, context, where)
    else:
        out = _run_javascript(transform_spec(value, ctx, where, "test")["javascript"], vars_, context, ctx)
    if not isinstance(out, dict):  # invariant: 'Transform function did not return a valid object'
        raise Skip("transformVars did not return an object")
    ctx.report.note(f"{where}: run once at import (promptfoo runs it once per test when an eval starts); the "
                    "cases hold its result")
    return {**vars_, **out}


def _run_javascript(spec: dict, vars_: dict, context: dict, ctx: Context) -> Any:
    from ..graders.javascript import node_path
    from ..graders.node_pool import NodeFailure, NodeTimeout, run_transform

    node = node_path()
    if node is None:
        raise Skip("transformVars is JavaScript and Node.js is not installed (node on PATH): not run")
    job = {k: spec[k] for k in ("code", "function") if k in spec}
    if "file" in spec:
        job["file"] = str((ctx.source.folder / spec["file"]).resolve())
    try:
        result = run_transform(node, {**job, "input_type": "vars"}, vars_, context, TIMEOUT_S)
    except NodeTimeout:
        raise Skip(f"transformVars timed out after {TIMEOUT_S:g} s") from None
    except NodeFailure as exc:
        raise Skip(f"transformVars: {exc}") from None
    if "error" in result:
        raise Skip(f"transformVars failed: {result['error']}")
    return result.get("value")


_PYTHON = """import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("promptfoo_transform_vars", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
data = json.load(sys.stdin)
print(json.dumps(getattr(module, sys.argv[2])(data["vars"], data["context"])))
"""


def _run_python(path: Path, function: str, vars_: dict, context: dict, where: str) -> Any:
    """promptfoo's runPython(file, fn, [vars, context]) in a fresh interpreter, under a timeout."""
    import json
    import subprocess
    import sys

    try:
        done = subprocess.run([sys.executable, "-c", _PYTHON, str(path.resolve()), function],
                              input=json.dumps({"vars": vars_, "context": context}), cwd=path.parent,
                              capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise Skip(f"transformVars timed out after {TIMEOUT_S:g} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exited with status {done.returncode}"])[-1]
        raise Skip(f"transformVars failed: {last[:300]}")
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise Skip("transformVars printed no JSON result") from None
