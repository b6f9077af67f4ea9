"""The subject protocol: one async method that turns a SubjectRequest into a Result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from ..errors import ConfigError, SubjectError
from .values import Output, Result, SubjectRequest


class Subject:
    """Base of every subject kind. Built from a spec dict; `run` never sees the reference."""

    kind: ClassVar[str] = ""
    #: default cap on concurrent attempts for this kind (None: the run's concurrency)
    default_max_concurrency: ClassVar[int | None] = None
    #: True when the subject calls a remote model (suites naming one are not offline)
    remote: ClassVar[bool] = False
    #: True when the subject calls a named model (`--model` overrides its `model` option)
    has_model: ClassVar[bool] = False
    #: False when the harness's wall time around run() is not the output's latency (outputs
    #: made earlier): an unrecorded latency then stays unknown instead of a near-zero figure
    timed_by_harness: ClassVar[bool] = True

    def __init__(self, spec: dict, base_dir: Path):
        self.base_dir = base_dir
        self.options = self.parse(spec)

    def parse(self, spec: dict) -> dict:
        """Validate the spec (minus `type`); return the options kept on the subject."""
        return {k: v for k, v in spec.items() if k != "type"}

    @property
    def spec(self) -> dict:
        """The saved form (no secrets: keys are referenced by environment variable name)."""
        return {"type": self.kind, **self.options}

    def check(self) -> None:
        """Fail before anything runs when the subject cannot work (missing CLI, module...)."""

    def prepare(self, concurrency: int) -> None:
        """Size what the subject holds for `concurrency` run() calls at once (called before
        the run, with the most the caller will have in flight; called again, the largest wins)."""

    async def run(self, request: SubjectRequest) -> Result:  # pragma: no cover - interface
        raise NotImplementedError

    async def aclose(self) -> None:
        """Release connections and processes."""


def to_result(value: Any, *, model_free: bool = False) -> Result:
    """Turn what a user function returned into a Result."""
    from .values import Measurements

    if isinstance(value, Result):
        return value
    if isinstance(value, Output):
        output = value
    elif isinstance(value, str):
        output = Output(text=value)
    elif value is None:
        raise SubjectError("subject returned None (return text, a JSON value or scoreboard.Output)",
                           kind="invalid-output")
    elif isinstance(value, (dict, list, int, float, bool)):
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise SubjectError(f"subject returned a value that is not JSON: {exc}", kind="invalid-output") from None
        output = Output(text=text, json=value)
    else:
        raise SubjectError(f"subject returned {type(value).__name__}; return text, a JSON value "
                           "or scoreboard.Output", kind="invalid-output")
    if model_free:
        return Result(output, Measurements(input_tokens=0, output_tokens=0, cost_usd=0.0, requests=0))
    return Result(output)


def require(options: dict, key: str, kind: str, typ: type | tuple = str) -> Any:
    """A required option of a subject spec, with a one-line error when absent or mistyped."""
    if key not in options:
        raise ConfigError(f"subject {kind!r} needs {key!r}", field=f"subject.{key}")
    value = options[key]
    if not isinstance(value, typ):
        raise ConfigError(f"subject {kind!r}: {key!r} has the wrong type ({type(value).__name__})",
                          field=f"subject.{key}")
    return value


def check_keys(options: dict, allowed: set[str], kind: str) -> None:
    """Reject unknown keys in a subject spec."""
    unknown = sorted(set(options) - allowed - {"type"})
    if unknown:
        raise ConfigError(f"subject {kind!r}: unknown field (allowed: {', '.join(sorted(allowed))})",
                          field=f"subject.{unknown[0]}")
