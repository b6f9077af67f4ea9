"""promptfoo's `transformVars`, run when the config is imported.

promptfoo runs a test's `options.transformVars` (else defaultTest's) once per test, before the
eval, on the test's vars merged over defaultTest's (src/evaluator.ts): `transform(code, vars,
{prompt: {}, uuid}, true, 'vars')` (src/util/transform.ts), and merges the returned object over
the vars. The vars are fixed before any model is called, so the importer runs the same
JavaScript (by Node.js, in a worker with a timeout: graders/node_pool.py) and writes the
transformed vars into the cases; the conversion report says so, since code that reads files,
the clock or the random uuid runs once here rather than at each eval.
"""

from __future__ import annotations

import uuid
from typing import Any

from .promptfoo_asserts import Context, Skip

TIMEOUT_S = 30.0


def transform_vars(value: Any, vars_: dict, ctx: Context, where: str) -> dict:
    """The vars after promptfoo's transformVars (raises Skip when it cannot run here)."""
    from ..graders.javascript import node_path
    from ..graders.node_pool import NodeFailure, NodeTimeout, run_transform
    from .promptfoo_asserts import js_transform

    node = node_path()
    if node is None:
        raise Skip("transformVars is JavaScript and Node.js is not installed (node on PATH): not run")
    spec = js_transform(value, ctx, where, "test")["javascript"]
    job = {k: spec[k] for k in ("code", "function") if k in spec}
    if "file" in spec:
        job["file"] = str((ctx.source.folder / spec["file"]).resolve())
    try:
        result = run_transform(node, {**job, "input_type": "vars"}, vars_,
                               {"prompt": {}, "uuid": str(uuid.uuid4())}, TIMEOUT_S)
    except NodeTimeout:
        raise Skip(f"transformVars timed out after {TIMEOUT_S:g} s") from None
    except NodeFailure as exc:
        raise Skip(f"transformVars: {exc}") from None
    if "error" in result:
        raise Skip(f"transformVars failed: {result['error']}")
    out = result.get("value")
    if not isinstance(out, dict):  # invariant: 'Transform function did not return a valid object'
        raise Skip("transformVars did not return an object")
    ctx.report.note(f"{where}: run once at import (promptfoo runs it at each eval); the cases hold its result")
    return {**vars_, **out}
