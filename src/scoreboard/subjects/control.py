"""`control` subject: the calibration controls of an instrument check, one condition each
(the good output, or one degraded copy of it). Built by the check stage, not named in suites:
its saved spec records the condition and the hash of its outputs, not the outputs themselves
(every attempt records the output it gave)."""

from __future__ import annotations

from pathlib import Path

from ..errors import SubjectError
from ..hashing import sha256_json
from .base import Subject, to_result
from .values import SubjectRequest


class ControlSubject(Subject):
    """Answers each control id with this condition's output for it."""

    kind = "control"
    timed_by_harness = False

    def __init__(self, condition: str, outputs: dict[str, str]):
        self.condition, self.outputs = condition, dict(outputs)
        super().__init__({"type": "control"}, Path("."))

    def parse(self, spec: dict) -> dict:
        return {"condition": self.condition, "outputs_hash": sha256_json(self.outputs)}

    async def run(self, request: SubjectRequest):
        if request.case_id not in self.outputs:
            raise SubjectError(f"control {request.case_id!r} has no {self.condition!r} output")
        return to_result(self.outputs[request.case_id], model_free=True)
