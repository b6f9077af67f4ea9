"""Graders of the rendered page (the suite renders outputs in headless Chromium): they read the
attempt's render record, so `verify` recomputes them from the report alone.

    page-renders            the output rendered: shots taken, no render error, no crash, not blank
    page-no-console-errors  no console error and no uncaught exception (blocked: fail also fails
                            on requests the renderer blocked)
    page-text-visible       each text (or any, mode: any) is in the page's visible text
                            (innerText: text hidden by display:none or visibility:hidden is not)
"""

from __future__ import annotations

import re
from typing import Any

from .base import Grader, check_keys, option_error, short
from .grade import Grade, GradeContext

_SPACE = re.compile(r"\s+")


class _PageGrader(Grader):
    needs_render = True

    def record(self, ctx: GradeContext) -> dict | None:
        page = ctx.render
        return None if page is None else page.record

    def grade(self, ctx: GradeContext) -> Grade:
        record = self.record(ctx)
        if record is None:
            return self.unassessed("the output was not rendered")
        return self.judge_page(record)

    def judge_page(self, record: dict) -> Grade:  # pragma: no cover - interface
        raise NotImplementedError


class PageRendersGrader(_PageGrader):
    """Passes when the page rendered and is not blank."""

    name = "page-renders"

    def judge_page(self, record: dict) -> Grade:
        problems = []
        if record.get("error"):
            problems.append(record["error"])
        if record.get("crashed"):
            problems.append("the page crashed")
        if not record.get("shots"):
            problems.append("no screenshot")
        if record.get("blank"):
            problems.append("the page is blank")
        if problems:
            return self.fail("; ".join(problems))
        return self.ok(f"rendered as {record.get('kind')}, {len(record['shots'])} shot(s)")


class PageNoConsoleErrorsGrader(_PageGrader):
    """Passes when the page logged no console error and threw no uncaught exception."""

    name = "page-no-console-errors"

    @classmethod
    def parse_options(cls, value: Any) -> dict:
        if value in (None, True, {}):
            return {}
        if not isinstance(value, dict):
            raise option_error(cls.name, f"options are a mapping, got {short(value)}")
        check_keys(cls.name, value, ("blocked",))
        if value.get("blocked", "ignore") not in ("ignore", "fail"):
            raise option_error(cls.name, "blocked is 'ignore' or 'fail'")
        return dict(value)

    def judge_page(self, record: dict) -> Grade:
        if record.get("error") or not record.get("shots"):
            return self.unassessed(f"the page did not render: {record.get('error') or 'no screenshot'}")
        from ..render.browser import CONSOLE_FLOOD

        console = list(record.get("console_errors") or [])
        errors = [e for e in console if e != CONSOLE_FLOOD] + list(record.get("page_errors") or [])
        problems = []
        if errors:
            problems.append(f"{len(errors)} error(s): {short(errors[0], 160)}")
        if record.get("crashed"):
            problems.append("the page crashed")
        if self.options.get("blocked") == "fail" and record.get("blocked_requests"):
            problems.append(f"{record['blocked_requests']} request(s) blocked (first {short(record['blocked'][:1])})")
        if problems:
            return self.fail("; ".join(problems))
        if CONSOLE_FLOOD in console:  # the messages past the flood were not read: no error is unknown
            return self.unassessed(f"{CONSOLE_FLOOD}: no error among those read")
        return self.ok("no console errors")


class PageTextVisibleGrader(_PageGrader):
    """Passes when every given text (or any, with mode: any) is visible on the page."""

    name = "page-text-visible"

    @classmethod
    def parse_options(cls, value: Any) -> dict:
        if isinstance(value, str):
            value = {"patterns": [value]}
        elif isinstance(value, list):
            value = {"patterns": value}
        if not isinstance(value, dict):
            raise option_error(cls.name, f"give a text, a list of texts or {{patterns: [...]}}, got {short(value)}")
        check_keys(cls.name, value, ("patterns", "mode", "ignore_case"))
        patterns = value.get("patterns")
        if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) and p.strip()
                                                                     for p in patterns):
            raise option_error(cls.name, "patterns is a nonempty list of texts")
        if value.get("mode", "all") not in ("all", "any"):
            raise option_error(cls.name, "mode is 'all' or 'any'")
        return {"patterns": patterns, "mode": value.get("mode", "all"),
                "ignore_case": bool(value.get("ignore_case", False))}

    def judge_page(self, record: dict) -> Grade:
        text = record.get("text")
        if text is None:
            return self.unassessed(f"the page did not render: {record.get('error') or 'no text captured'}")
        fold = (lambda t: _SPACE.sub(" ", t).strip().casefold()) if self.options["ignore_case"] \
            else (lambda t: _SPACE.sub(" ", t).strip())
        page = fold(text)
        missing = [p for p in self.options["patterns"] if fold(p) not in page]
        found = len(self.options["patterns"]) - len(missing)
        ok = not missing if self.options["mode"] == "all" else found > 0
        if ok:
            return self.ok(f"{found} of {len(self.options['patterns'])} visible")
        if record.get("text_truncated"):
            return self.unassessed(f"not in the first {len(text)} characters kept of the page's text: "
                                   f"{short(missing[0])}")
        return self.fail(f"not visible: {', '.join(short(m, 60) for m in missing[:5])}")
