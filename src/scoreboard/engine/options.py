"""What a run is asked to do (RunOptions), which attempts it starts with (Carried), and what it
leaves behind (Outcome)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..jsonio import loads


@dataclass
class Carried:
    """Attempts that already exist, entering the run as they are: written to this run's attempt
    log, counted, never dispatched. `absent` names planned attempts that do not exist at all
    (an import that did not supply them): they are left out of the report, not failed."""

    records: list[dict] = field(default_factory=list)
    absent: set[tuple] = field(default_factory=set)
    #: the source's run status and stop reason: a stopped source stays stopped
    status: str | None = None
    stop_reason: str | None = None
    #: reviews bound to output hashes, and pairwise judgments, carried over unchanged
    reviews: dict | None = None
    pairwise: dict | None = None


@dataclass
class RunOptions:
    """How to run and where to write; everything else comes from the Suite."""

    argv: list[str] = field(default_factory=list)
    formats: tuple[str, ...] | None = None
    progress: bool = True
    grace_s: float | None = None
    #: the flags this run was started with (saved so `--resume` can rebuild the same suite)
    flags: dict = field(default_factory=dict)
    dry_run: bool = False
    #: the run was started with --live (a suite with require_live: true sends nothing without it)
    live: bool = False
    resume_dir: str | None = None
    junit_path: str | None = None
    #: score's rule: exit 3 unless every case passes
    require_all_pass: bool = False
    #: extra fields for the report's `run` block (e.g. where a transcript came from)
    extra_run: dict | None = None
    #: write the JSON report exactly here (created exclusively; other formats beside it)
    output_json: str | None = None
    carried: Carried | None = None
    executor: str | None = None
    #: the executor's own settings (the Ray executor's cluster address)
    executor_settings: dict = field(default_factory=dict)
    store: Any = None
    #: called after the attempts ran, with a lookup of finished attempts; returns more fields
    #: for the run block (replay's diff reads the live run from the attempt record this way)
    finalize: Callable[[Callable[[str, str, int], dict | None]], dict] | None = None
    #: hold a small run's whole report in the Outcome (library callers); the CLI reads the file
    #: only if it needs to
    hold_report: bool = True
    #: called once, when every check that can refuse the run has passed and before any attempt
    #: runs (the CLI prints its preamble: a refused run prints only its error)
    announce: Callable[[], None] | None = None


@dataclass
class Outcome:
    """What a run left: the report's head (everything but the attempts), its files, the exit code."""

    head: dict
    paths: dict[str, Path]
    exit_code: int
    _report: dict | None = None
    #: the typed report the renderings were made from (its attempts possibly a sample), or None
    record: Any = None
    #: per variant: the pages' blocked requests and render failures (record/render_facts.py), or None
    renders: Any = None
    #: `--resume` of a run that had already completed: nothing ran and no file was written
    already_complete: bool = False
    #: each case's file and line ({case id: (file, line)}), for GitHub annotations; None: unknown
    case_lines: dict | None = None

    @property
    def report(self) -> dict:
        """The whole JSON report (read from its file after the run; see EAGER_REPORT_ATTEMPTS)."""
        if self._report is None:
            self._report = loads(Path(self.paths["json"]).read_bytes())
        return self._report
