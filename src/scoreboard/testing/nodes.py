"""The pytest nodes of a suite: a collector (from a test module's `suite(...)` or from a suite
file matched by the `scoreboard_suites` ini option) holding one item per case and a gates item."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from ..record.annotations import case_files
from .handle import SuiteHandle, blame_keyword
from .messages import case_verdict, gates_verdict, safe

#: the name of the item that asserts the suite's gates
GATES = "gates"
#: the name the session plugin is registered under
SESSION = "scoreboard-session"
#: how "::" in a case id is written in its test's name: pytest splits node ids at "::", so a
#: name holding it could not be selected on the command line nor found again by --lf
SEPARATOR = ("::", ":%3A")
#: how "[" in a case id is written when the test's name would not end with "]": pytest reads a
#: node id's "[" as the start of its parameters, up to a closing "]" at the end: it wrote the id
#: `a [b] c` back as `a [b] c]` (in JUnit XML and the short summary) and could not select it
BRACKET = ("[", "%5B")


def item_name(case_id: str, variant: str | None) -> str:
    """The test's name: the case id (with "::" written ":%3A", and "[" written "%5B" unless the
    name ends with "]"), and `[variant]` when the suite has several."""
    name = case_id.replace(*SEPARATOR)
    if variant is not None:
        return f"{name}[{variant}]"
    return name.replace(*BRACKET) if "[" in name and not name.endswith("]") else name


def skip(message: str):
    """Skip the running test, reported at its own location (the test module's line that makes
    the suite), not at this line of scoreboard's source."""
    raise pytest.skip.Exception(safe(message), _use_item_location=True)


class CaseFailed(AssertionError):
    """A failure whose message says everything (no traceback of the plugin is shown)."""


class SuiteNode:
    """What both suite collectors share: loading the suite and making its items."""

    handle: SuiteHandle
    suite_path: Path
    case_ids: list[str]
    #: the line (0-based) its tests are reported at: where the test module calls `suite(...)`
    line: int = 0

    def collect(self):
        from ..errors import ScoreboardError
        from ..suite.load import load_suite

        try:
            # offline, as validate: an unset API key fails the suite's tests when they run (or a
            # module's skipif skips them), not the whole session's collection
            suite = load_suite(self.suite_path, self.handle.flags, offline=True)
        except ScoreboardError as exc:
            where = f"{self.nodeid.split('::')[0]}:{self.line + 1}"
            raise self.CollectError(f"scoreboard: {blame_keyword(exc, self.handle.flags, where)}") from None
        self.case_ids = [c.id for c in suite.cases]
        for case in suite.cases:
            if case.id == GATES:  # named where the case is written (its file and line), not only the suite
                where = f"{case.source}:{case.line}" if case.source and case.line else (case.source or "")
                raise self.CollectError(f"scoreboard: {where or self.suite_path}, case {GATES!r}: a case is named "
                                        f"{GATES!r}, the name of the suite's gates test ({self.suite_path}): rename "
                                        "the case")
        # With several variants each gets its test of each case, named like a parametrized test.
        variants = [v.name for v in suite.variants] if len(suite.variants) > 1 else [None]
        names: dict[str, str] = {}
        files = case_files(suite.cases)
        for case in suite.cases:
            where = f"{files[case.source]}:{case.line}" if case.line else files[case.source]
            for variant in variants:
                name = item_name(case.id, variant)
                if names.setdefault(name, case.id) != case.id:
                    raise self.CollectError(f"scoreboard: {self.suite_path}: cases {names[name]!r} and {case.id!r} "
                                            f"would both be the test {name!r} (\"::\" is written \":%3A\", and \"[\" "
                                            "may be \"%5B\", in a test's name): rename one")
                item = CaseItem.from_parent(self, name=name, case_id=case.id, variant=variant, where=where)
                # -k matches a case's category and tags as well as its id, and a plugin or
                # conftest finds them in item.keywords (`"billing" in item.keywords`), as marks'
                words = [t for t in [case.category, *case.tags] if t]
                item.extra_keyword_matches.update(words)
                for word in words:
                    item.keywords[word] = True
                yield item
        yield GatesItem.from_parent(self, name=GATES)

    def outcome(self) -> tuple[dict, dict | None, dict[str, list[dict]]]:
        """This suite's run (made on first use): its info, report and attempts by case."""
        return self.config.pluginmanager.get_plugin(SESSION).outcome(self)


class SuiteCollector(SuiteNode, pytest.Collector):
    """A `suite(...)` assigned to a name in a test module."""

    def __init__(self, *, handle: SuiteHandle, **kwargs):
        super().__init__(**kwargs)
        self.handle = handle
        self.suite_path = handle.resolve(Path(self.path).parent)
        if handle.origin and same_file(handle.origin[0], self.path):
            self.line = max(0, handle.origin[1] - 1)


def same_file(a: str, b) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, ValueError):
        return False


class SuiteFile(SuiteNode, pytest.File):
    """A suite file that matches a `scoreboard_suites` pattern."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.handle = SuiteHandle(str(self.path))
        self.suite_path = Path(self.path)


class SuiteItem(pytest.Item):
    """A test of a suite. Its node id is given as text, as pytest reads one back (from --lf's
    cache, the command line, xdist), so that `case[variant]` is the same id both ways.
    Like a doctest, it takes the fixtures in scope that are autouse or named by
    `pytest.mark.usefixtures` (a server the subject calls, an environment variable), set up
    before the suite runs in its first test."""

    def __init__(self, **kwargs):
        parent = kwargs["parent"]
        kwargs.setdefault("nodeid", f"{parent.nodeid}::{kwargs['name']}")
        super().__init__(**kwargs)
        # pytest evaluates a mark's string condition (`skipif("not HAS_KEY")`) in the globals of
        # `item.obj`, as a test function's: the test module's (a suite file has none)
        module = self.getparent(pytest.Module)
        self.obj = SimpleNamespace(__globals__=module.obj.__dict__ if module is not None else {})
        self.funcargs: dict[str, object] = {}
        self._request = None
        try:  # what pytest's own doctest items do (pytest 8 and later)
            from _pytest.fixtures import TopRequest
        except ImportError:  # an older pytest: no fixtures
            return
        fixtureinfo = self.session._fixturemanager.getfixtureinfo(node=self, func=None, cls=None)
        self._fixtureinfo = fixtureinfo
        self.fixturenames = fixtureinfo.names_closure
        self._request = TopRequest(self, _ispytest=True)

    def setup(self) -> None:
        if self._request is not None:
            self._request._fillfixtures()

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CaseFailed):
            return safe(str(excinfo.value))
        return super().repr_failure(excinfo, style=style)

    def run_info(self) -> tuple[dict, dict | None, dict[str, list[dict]]]:
        info, report, by_case = self.parent.outcome()
        if info.get("error"):
            raise CaseFailed(f"suite {self.parent.suite_path} did not run: {info['error']}")
        return info, report, by_case


class CaseItem(SuiteItem):
    """One case (of one variant, when the suite has several): passes when every attempt of it
    (every run) passed."""

    def __init__(self, *, case_id: str, variant: str | None, where: str, **kwargs):
        super().__init__(**kwargs)
        self.case_id = case_id
        self.variant = variant
        self.where = where

    def runtest(self) -> None:
        _, _, by_case = self.run_info()
        attempts = [a for a in by_case.get(self.case_id, []) if self.variant in (None, a["variant"])]
        verdict, message = case_verdict(self.case_id, attempts, self.where)
        if verdict == "failed":
            raise CaseFailed(message)
        if verdict == "unassessed":
            skip(message)

    def reportinfo(self):
        return self.path, self.parent.line, f"case {self.name}"


class GatesItem(SuiteItem):
    """The suite's gates (fail_under, fail_under_metrics, the baseline regression gate), checked
    on the run of the selected cases; skipped when the suite sets none."""

    def runtest(self) -> None:
        if selected_cases(self.parent) == []:
            skip(f"suite {self.parent.suite_path}: every selected case's test is skipped: no case ran, "
                 "so no gate was checked")
        _, report, _ = self.run_info()
        ran = len(report["plan"]["cases"])
        verdict, message = gates_verdict(report, ran, len(self.parent.case_ids))
        if verdict == "failed":
            raise CaseFailed(message)
        if verdict == "none":
            skip(message)

    def reportinfo(self):
        return self.path, self.parent.line, "gates"


def selected_cases(node: SuiteNode) -> list[str] | None:
    """The case ids of the suite's selected items (after -k and deselection) that will run (not
    skipped by a mark: a conftest's `item.add_marker(pytest.mark.skip)`), or None for every case:
    when all are selected, or only the gates item is (the gates are then the whole suite's).
    An empty list: every selected case's test is skipped, so no case runs."""
    items = [item for item in node.session.items if isinstance(item, CaseItem) and item.parent is node]
    if not items:
        return None
    chosen = {item.case_id for item in items if not will_skip(item)}
    if len(chosen) == len(node.case_ids):
        return None
    return [cid for cid in node.case_ids if cid in chosen]


def will_skip(item: pytest.Item) -> bool:
    """Whether a mark skips the test before it runs (skip, a true skipif, xfail(run=False)), as
    pytest decides it at setup: such a case is not run (no model is called for a skipped test,
    and the gates are not checked on it). A mark that cannot be evaluated runs the case (the
    test itself then reports the mark's error)."""
    try:
        from _pytest.skipping import evaluate_skip_marks, evaluate_xfail_marks
    except ImportError:  # another pytest: every selected case runs
        return False
    try:
        if evaluate_skip_marks(item) is not None:
            return True
        xfail = evaluate_xfail_marks(item)
        return xfail is not None and not xfail.run and not item.config.option.runxfail
    except Exception:  # noqa: BLE001  (a skipif condition that raises: the test reports it)
        return False
