"""Grader registry: name -> class, imported lazily. Adding a grader is one line here."""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import ConfigError
from ..record.constants import JUDGE_GRADER_NAMES
from .base import Grader

GRADERS: dict[str, str] = {
    "exact": "scoreboard.graders.exact:ExactGrader",
    "json-fields": "scoreboard.graders.json_fields:JsonFieldsGrader",
    "fields": "scoreboard.graders.fields:FieldsGrader",
    "contains": "scoreboard.graders.text:ContainsGrader",
    "not-contains": "scoreboard.graders.text:NotContainsGrader",
    "regex": "scoreboard.graders.text:RegexGrader",
    "not-regex": "scoreboard.graders.text:NotRegexGrader",
    "json-valid": "scoreboard.graders.jsonschema_:JsonValidGrader",
    "json-schema": "scoreboard.graders.jsonschema_:JsonSchemaGrader",
    "one-of": "scoreboard.graders.one_of:OneOfGrader",
    "tool-calls": "scoreboard.graders.agent:ToolCallsGrader",
    "status": "scoreboard.graders.agent:StatusGrader",
    "max-latency-ms": "scoreboard.graders.agent:MaxLatencyGrader",
    "citations": "scoreboard.graders.citations:CitationsGrader",
    "max-cost": "scoreboard.graders.limits:MaxCostGrader",
    "max-tokens": "scoreboard.graders.limits:MaxTokensGrader",
    "llm-judge": "scoreboard.judges.graders:LlmJudgeGrader",
    "rubric-score": "scoreboard.judges.graders:RubricScoreGrader",
    "pointwise": "scoreboard.judges.graders:PointwiseGrader",
    # rendered pages (issue 17)
    "page-renders": "scoreboard.graders.page:PageRendersGrader",
    "page-no-console-errors": "scoreboard.graders.page:PageNoConsoleErrorsGrader",
    "page-text-visible": "scoreboard.graders.page:PageTextVisibleGrader",
}

#: graders that call a model: not recomputable offline, and `rescore` needs --allow-judge
JUDGE_GRADERS = JUDGE_GRADER_NAMES

_classes: dict[str, type[Grader]] = {}


def grader_class(name: str) -> type[Grader]:
    """The class registered under `name`; ConfigError listing the known names otherwise."""
    cls = _classes.get(name)
    if cls is None:
        target = GRADERS.get(name)
        if target is None:
            known = ", ".join(sorted(GRADERS))
            raise ConfigError(f"unknown grader {name!r} (known: {known})", field="graders")
        module, attr = target.split(":")
        cls = getattr(importlib.import_module(module), attr)
        _classes[name] = cls
    return cls


def split_spec(spec: Any) -> tuple[str, Any]:
    """`"exact"` or `{"regex": ...}` -> (name, value)."""
    if isinstance(spec, str):
        return spec, None
    if isinstance(spec, dict) and len(spec) == 1:
        (name, value), = spec.items()
        if isinstance(name, str):
            return name, value
    raise ConfigError(f"a grader spec is a name or a one-key mapping {{name: options}}, got {spec!r}",
                      field="graders")


def build_grader(spec: Any) -> Grader:
    """Build a grader from its saved spec."""
    name, value = split_spec(spec)
    return grader_class(name)(value)


def register(name: str, target: str) -> None:
    """Register a grader class ("module:Class") under `name`, e.g. from a plugin."""
    GRADERS[name] = target
    _classes.pop(name, None)
