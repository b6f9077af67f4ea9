"""Inspect's model_graded_qa(...) / model_graded_fact(...) as the cases entry's scorer and the
suite's judge (see inspect_task.py; the grader is judges/inspect_graded.py).

Inspect 0.3.285 grades with `model=` when the scorer names one (a model of its own, sent no
GenerateConfig of the task), else with the model bound to `model_role` ("grader") when the eval
binds one, else with the model being evaluated, sent the task's GenerateConfig (established by
running Inspect against a loopback server: the grader's request carried the task's temperature
and max_tokens only in that case). A list of models (a majority vote of several graders) is
listed as not converted: a suite has one judge.
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import ConfigError
from .inspect_ast import Call, FuncRef, unresolved_in

#: model_graded_qa / model_graded_fact's parameters, in order (inspect_ai 0.3.285)
PARAMS = ("template", "instructions", "grade_pattern", "include_history", "partial_credit", "model", "model_role",
          "reducer")


class Graded:
    """The model-graded scorers of one task: each one's grader spec, and the judge they share."""

    def __init__(self, skip: Callable[[int, str], None], note: Callable[[str], None],
                 template_text: Callable[[Any, int], Any], roles_bound: bool):
        self.skip, self.note, self.template_text, self.roles_bound = skip, note, template_text, roles_bound
        #: the judge the converted scorers name: None (not yet), "" (the evaluated model) or PROVIDER/MODEL
        self.model: str | None = None
        self.lines: list[int] = []

    def __call__(self, call: Call) -> dict | None:
        what = f"scorer {call.name}(...)"
        if len(call.args) > len(PARAMS):
            self.skip(call.line, f"{what}: more positional arguments than it takes")
            return None
        args = dict(zip(PARAMS, call.args)) | call.kwargs
        unknown = sorted(set(args) - set(PARAMS))
        bad = unresolved_in(args) or next((v for k, v in args.items() if k not in ("model", "model_role") and
                                           isinstance(v, (Call, FuncRef))), None)
        if unknown or bad is not None:
            from .inspect_parts import describe

            self.skip(call.line, f"{what}: " + (f"argument {unknown[0]} is not converted" if unknown else
                                                f"{describe(bad)} (not converted)"))
            return None
        if "template" in args and args["template"] is not None:
            args["template"] = self.template_text(args["template"], call.line)
            if not isinstance(args["template"], str):
                self.skip(call.line, f"{what}: template {getattr(args['template'], 'why', '')} (not converted)")
                return None
        model = args.get("model")
        if isinstance(model, list):
            self.skip(call.line, f"{what}: model= a list of {len(model)} graders (Inspect takes their majority "
                                 "vote): not converted, a suite has one judge")
            return None
        if model is not None and not (isinstance(model, str) and _provider(model)):
            self.skip(call.line, f"{what}: model={model!r}: only openai/... and anthropic/... graders are converted"
                      if isinstance(model, str) else f"{what}: model={getattr(model, 'name', '?')}(...) is not "
                                                     "converted")
            return None
        role = args.get("model_role", "grader")
        if model is None and role is not None:
            if not isinstance(role, str):
                self.skip(call.line, f"{what}: model_role={getattr(role, 'name', '?')}(...) is not converted")
                return None
            if self.roles_bound:
                self.skip(call.line, f"{what}: Task(model_roles=...) may bind the {role!r} role that grades: not "
                                     "converted")
                return None
        wanted = model or ""
        if self.model is not None and wanted != self.model:
            self.skip(call.line, f"{what}: its grader ({wanted or 'the evaluated model'}) differs from another "
                                 f"scorer's ({self.model or 'the evaluated model'}): a suite has one judge")
            return None
        options: dict[str, Any] = {"scorer": call.name}
        for key in ("template", "instructions"):  # Inspect: an empty one is the default
            if args.get(key):
                options[key] = args[key]
        for key, default in (("grade_pattern", None), ("partial_credit", False), ("include_history", False)):
            if args.get(key, default) is not default:
                options[key] = args[key]
        from ..graders.registry import build_grader

        try:
            build_grader({"inspect-model-graded": options})
        except ConfigError as exc:
            self.skip(call.line, f"{what}: {exc.detail}")
            return None
        self.model = wanted
        self.lines.append(call.line)
        if "grade_pattern" in options:
            self.note(f"{what} (line {call.line}): grade_pattern's first group is the grade, read as Inspect's "
                      "accuracy reads it: C 1, P 0.5, I 0, yes/true 1, no/false 0, a number; any other text scores "
                      "0, as Inspect scores it (with a warning)")
        del options["scorer"]
        return {call.name: options} if options else call.name

    def judge(self, subject: dict, config: dict) -> dict | None:
        """The suite's `judge:`: the scorers' model, else the subject with the task's config."""
        if self.model is None:
            return None
        where = ", ".join(str(n) for n in self.lines)
        if self.model:
            provider, _, name = self.model.partition("/")
            self.note(f"judge: {self.model} grades (the model= of the scorer at line {where})")
            return {"type": provider, "model": name}
        judge = {k: v for k, v in subject.items() if k != "params"}
        if config:
            judge["params"] = dict(config)
        self.note(f"judge: the evaluated model grades (line {where}), sent the task's GenerateConfig as Inspect "
                  "sends it; a model the eval binds to the grader role (model_roles) is not known here: change "
                  "`judge:` to use one. A grade with no GRADE in the judge's reply is a judge failure (Inspect: "
                  "unscored); P scores 0.5 and fails")
        return judge


def _provider(model: str) -> bool:
    provider, _, name = model.partition("/")
    return provider in ("openai", "anthropic") and bool(name)
