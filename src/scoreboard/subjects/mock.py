"""`mock` subject: scripted outputs, for tests and `--dry-run`. Makes no model call."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ..errors import ConfigError, SubjectError
from .base import Subject, check_keys, to_result
from .values import SubjectRequest


class MockSubject(Subject):
    """`runs` {case: [output per run]}, else `outputs` {case: output}, else `default`, else the input echoed."""

    kind = "mock"

    def parse(self, spec: dict) -> dict:
        check_keys(spec, {"outputs", "runs", "default", "latency_ms", "errors"}, self.kind)
        outputs = spec.get("outputs", {})
        if not isinstance(outputs, dict):
            raise ConfigError("mock subject: 'outputs' must map case ids to outputs", field="subject.outputs")
        errors = spec.get("errors", [])
        if not isinstance(errors, list):
            raise ConfigError("mock subject: 'errors' must be a list of case ids", field="subject.errors")
        latency = spec.get("latency_ms")
        if latency is not None and (isinstance(latency, bool) or not isinstance(latency, (int, float))
                                    or not 0 <= latency <= 600_000):
            # "5" failed every attempt at run time (a str divided by 1000)
            raise ConfigError(f"mock subject: 'latency_ms' must be a number of milliseconds from 0 to 600000 "
                              f"(got {latency!r})", field="subject.latency_ms")
        runs = spec.get("runs", {})
        if not isinstance(runs, dict) or not all(isinstance(v, list) for v in runs.values()):
            raise ConfigError("mock subject: 'runs' must map case ids to a list of outputs (one per run)",
                              field="subject.runs")
        return {k: v for k, v in spec.items() if k != "type"}

    async def run(self, request: SubjectRequest):
        latency = self.options.get("latency_ms")
        if latency:
            await asyncio.sleep(latency / 1000)
        if request.case_id in self.options.get("errors", ()):
            raise SubjectError("scripted error (mock subject)")
        outputs = self.options.get("outputs", {})
        per_run = self.options.get("runs", {})
        value: Any
        if request.case_id in per_run and per_run[request.case_id]:
            scripted = per_run[request.case_id]
            value = scripted[request.run % len(scripted)]
        elif request.case_id in outputs:
            value = outputs[request.case_id]
        elif "default" in self.options:
            value = self.options["default"]
        else:
            value = request.input if isinstance(request.input, str) else json.dumps(request.input)
        return to_result(value, model_free=True)
