"""The few lines a command prints when a run ends: pass rates, comparisons, judges, gates, files."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from .io import fields_over, fmt_rate
from .schema import Report

# (count in the variant summary, singular label, plural label), shown only when non-zero
_COUNTS = (("errors", "error", "errors"), ("not_run", "not run", "not run"),
           ("interrupted", "interrupted", "interrupted"), ("unassessed", "unassessed", "unassessed"),
           ("waiting", "waiting on a batch", "waiting on batches"))


def _k(fig) -> str:
    if fig is None:
        return "n/a"
    ci = fig.ci
    return fmt_rate(fig.value) + (f" [{fmt_rate(ci.low)}–{fmt_rate(ci.high)}]" if ci is not None else "")


def print_summary(report: Report, paths: dict[str, Path], out: TextIO) -> None:
    """Print the run's outcome to `out`: one line per variant, then what else the summary says."""
    run, summary = report.run, report.summary
    print(f"{run.suite}: {run.status} ({run.id})", file=out)
    for name, s in summary.variants.items():
        judged = s.passed + s.failed + s.errors
        ci = s.pass_rate_ci
        interval = f" [95% CI {fmt_rate(ci.low)}–{fmt_rate(ci.high)}]" if ci is not None and ci.low is not None else ""
        extra = "".join(f", {n} {one if n == 1 else many}" for key, one, many in _COUNTS
                        for n in [getattr(s, key) or 0] if n)
        print(f"  {name}: pass rate {fmt_rate(s.pass_rate)}{interval} ({s.passed}/{judged}{extra})", file=out)
        if s.pass_at_k:
            k = max(s.pass_at_k, key=int)
            hat = (s.pass_hat_k or {}).get(k)
            print(f"    pass@{k} {_k(s.pass_at_k[k])}, pass^{k} {_k(hat)} (by case)", file=out)
        if s.field_accuracy_overall is not None:
            print(f"    fields {_k(s.field_accuracy_overall)} ({fields_over(s)})", file=out)
    for comp in summary.comparisons:
        if comp.headline:
            print(f"  {comp.headline}", file=out)
        d = comp.detectable_difference
        if d is not None and d.value is not None:
            print(f"    could detect differences of {d.value * 100:.0f} points or more (80% power, paired t)", file=out)
        for flag in comp.flags:
            if not flag.startswith("small sample") or flag not in comp.headline:
                print(f"    note: {flag}", file=out)
    judges = summary.judges
    for dq in (judges.dq if judges is not None else None) or ():
        ci = dq.ci
        interval = f" (95% CI {ci.low:+.2f} to {ci.high:+.2f})" if ci is not None and ci.low is not None else ""
        flags = "".join(f"; {f}" for f in dq.flags)
        print(f"  dQ {dq.a} - {dq.b}: {dq.dq:+.2f}{interval} on {dq.cases} cases "
              f"(blind pointwise quality, 0-3{flags})", file=out)
    for pw in (judges.pairwise if judges is not None else None) or ():
        pc = pw.position_consistency
        flags = "".join(f"; {f}" for f in pw.flags)
        print(f"  pairwise {pw.a} vs {pw.b}: {pw.a_wins} wins, {pw.b_wins} losses, {pw.ties} ties; "
              f"position consistency {'n/a' if pc is None else f'{pc:.0%}'}{flags}", file=out)
    failures = sum(v.judge_failures for v in judges.variants.values()) if judges is not None else 0
    if failures:
        print(f"  judge failures (not assessed): {failures}", file=out)
    split = sum(v.no_majority for v in judges.variants.values()) if judges is not None else 0
    if split:
        print(f"  judge runs split evenly (not assessed): {split}", file=out)
    for gate in report.gates:
        print(f"  gate {'passed' if gate.passed else 'FAILED'}: {gate.description or gate.gate}", file=out)
    if run.stop_reason:
        print(f"  stopped: {run.stop_reason}", file=out)
    if run.status == "waiting":
        open_ids = [b.batch_id or b.submission for b in run.batches or () if b.state != "ended"]
        folder = Path(paths["json"]).with_suffix("") if "json" in paths else "RUN_DIR"
        print(f"  waiting on {len(open_ids)} provider batch{'es' if len(open_ids) != 1 else ''} "
              f"({', '.join(open_ids[:5])}{', …' if len(open_ids) > 5 else ''}): collect with "
              f"scoreboard run --resume {folder} (exit code 4)", file=out)
    for fmt, path in paths.items():
        print(f"  {fmt}: {path}", file=out)
