"""The pytest plugin (entry point `scoreboard` in the pytest11 group): collects suites into one
test per case plus a gates test, runs each suite once per session, prints the report paths.

    # test_evals.py
    import scoreboard.testing
    suite = scoreboard.testing.suite("evals/suite.yaml", fail_under=0.9)

or, in the pytest configuration, `scoreboard_suites = evals/*.yaml` (glob patterns matched
against paths relative to the rootdir) to collect suite files themselves.
"""

from __future__ import annotations

import shutil
import tempfile
from fnmatch import fnmatch
from pathlib import Path

import pytest

from .handle import SuiteHandle
from .messages import safe, summary_lines
from .nodes import SESSION, SuiteCollector, SuiteFile, SuiteNode, selected_cases
from .runs import Coordinator, attempts_by_case, read_report, run_suite, suite_key

INI = "scoreboard_suites"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(INI, type="linelist", default=[],
                  help="glob patterns (relative to the rootdir) of suite files to collect as scoreboard suites")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(Session(config), SESSION)


def pytest_pycollect_makeitem(collector, name: str, obj):
    if isinstance(obj, SuiteHandle):
        return SuiteCollector.from_parent(collector, name=name, handle=obj)
    return None


def pytest_collect_file(file_path: Path, parent):
    patterns = parent.config.getini(INI)
    if not patterns:
        return None
    try:
        rel = file_path.resolve().relative_to(parent.config.rootpath.resolve()).as_posix()
    except ValueError:
        return None
    if any(fnmatch(rel, pattern) for pattern in patterns):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


class Session:
    """The session's suites: runs them (once each), and reports where their reports went.
    Under pytest-xdist the controller makes the folder the workers coordinate through and
    collects, from each worker, the runs it made."""

    def __init__(self, config: pytest.Config):
        self.config = config
        workerinput = getattr(config, "workerinput", None) or {}
        self.coordinator = Coordinator(workerinput.get("scoreboard_dir"))
        self.shared_dir: str | None = None
        self.outcomes: dict[str, tuple] = {}
        self.from_workers: list[dict] = []
        #: the workers whose runs were collected: xdist says twice that a worker went down when
        #: it ended on an interrupt (finished, then errored down), and its runs were listed twice
        self.workers_down: set[str] = set()

    def outcome(self, node: SuiteNode) -> tuple[dict, dict | None, dict[str, list[dict]]]:
        key = suite_key(node.nodeid)
        if key not in self.outcomes:
            argv = ["pytest", *self.config.invocation_params.args]
            info = self.coordinator.result(key, lambda: {"suite_file": str(node.suite_path),
                                                         **run_suite(node.suite_path, node.handle.flags,
                                                                     selected_cases(node), argv)},
                                                 str(node.suite_path))
            report = None if info.get("error") else read_report(info)
            self.outcomes[key] = (info, report, attempts_by_case(report) if report else {})
            if info.get("interrupted"):
                # Ctrl+C (or SIGTERM) reached the run, whose handlers stopped it and wrote its
                # reports: pytest never saw it, so say it here, or the session would go on to
                # run the next suite (calling its models) and exit 1, not 2
                pytest.exit(safe(f"scoreboard: the run of suite {info.get('suite')} was {info['interrupted']}: "
                                 "the session stops here (its reports are named in the summary)"),
                            returncode=pytest.ExitCode.INTERRUPTED)
        return self.outcomes[key]

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        if self.shared_dir is None:
            self.shared_dir = tempfile.mkdtemp(prefix="scoreboard-pytest-")
        node.workerinput["scoreboard_dir"] = self.shared_dir

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        worker = str((getattr(node, "workerinput", None) or {}).get("workerid") or id(node))
        if worker in self.workers_down:
            return
        self.workers_down.add(worker)
        self.from_workers.extend((getattr(node, "workeroutput", None) or {}).get("scoreboard_runs", []))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session) -> None:
        if hasattr(self.config, "workeroutput"):  # a worker: its runs go home with its output
            self.config.workeroutput["scoreboard_runs"] = list(self.coordinator.ran)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        runs = self.coordinator.ran + self.from_workers
        if not runs:
            return
        terminalreporter.write_sep("-", "scoreboard reports")
        for info in runs:
            report = None
            if not info.get("error"):
                try:
                    report = read_report(info)
                except (OSError, ValueError):
                    pass
            for line in summary_lines(info, report):
                terminalreporter.write_line(safe(line))
        for info in runs:
            # GitHub's workflow annotations (the same lines `scoreboard run` prints under GitHub
            # Actions), after every summary line: already escaped, so written as they are
            for line in info.get("annotations") or ():
                terminalreporter.write_line(line)

    def pytest_unconfigure(self) -> None:
        if self.shared_dir is not None:
            shutil.rmtree(self.shared_dir, ignore_errors=True)
