"""Live comparison plans: a suite that says `require_live: true` spends provider credits only
when a run is started with an explicit `--live`, and its plan is bounded (origin 004's live
benchmark): it selects 1 to `limits.live.max_cases` unique case ids (`--case`, or `case:` in
the suite; a conversation's id counts once) and sets a request budget of 1 to
`limits.live.max_requests` (`--max-requests`, or `budget.max_requests`). `scoreboard plan`
checks the same bounds and prints the command that runs the plan live.
"""

from __future__ import annotations

import shlex

from ..errors import ConfigError
from ..located import with_lines
from .suite import Suite

#: flags of `scoreboard plan` that `run` does not take (each with the number of values it has)
PLAN_ONLY = {"--output": 1, "--json": 0, "--pilot": 1, "--detect": 1}


def check_live_plan(suite: Suite) -> None:
    """The bounds of a live comparison plan; nothing to check unless the suite requires --live.
    A missing selection or budget names the suite file that requires them; a value out of
    bounds names only its field, which the CLI maps to the flag that gave it."""
    source = str(suite.source) if getattr(suite, "source", None) else None
    cfg = suite.config
    if not cfg.require_live:
        return
    bounds = cfg.limits.live
    ids = list(cfg.case or [])
    what = "a live comparison plan (require_live: true)"
    if not ids:
        raise ConfigError(f"{what} selects the cases it sends: give --case ID (1 to {bounds.max_cases} unique "
                          "ids; a conversation's id selects all its turns)", file=source, field="case")
    twice = next((i for n, i in enumerate(ids) if i in ids[:n]), None)
    if twice is not None:
        raise ConfigError(f"{what}: --case names {twice!r} twice (case ids must be unique)", field="case")
    if len(ids) > bounds.max_cases:
        raise ConfigError(f"{what} selects at most {bounds.max_cases} case ids (limits.live.max_cases), "
                          f"got {len(ids)}", field="case")
    cap = cfg.budget.max_requests
    if cap is None:
        raise ConfigError(f"{what} needs a request budget across the whole run: give --max-requests N "
                          f"(1 to {bounds.max_requests})", file=source, field="max_requests")
    if not 1 <= cap <= bounds.max_requests:
        raise ConfigError(f"{what} allows 1 to {bounds.max_requests} requests (limits.live.max_requests), "
                          f"got --max-requests {cap}", field="max_requests")


def check_live_opt_in(suite: Suite, *, live: bool, dry_run: bool) -> None:
    """A suite that requires --live sends nothing without it (a dry run sends nothing anyway)."""
    if suite.config.require_live and not live and not dry_run:
        raise with_lines(ConfigError("this suite sets require_live: true: its requests spend provider credits, "
                                     "so a run sends them only with an explicit --live (nothing was sent; "
                                     "`scoreboard plan` prints the command)", file=suite.source,
                                     field="require_live"), suite.source)


def live_command(plan_argv: list[str]) -> str:
    """`scoreboard run ...` with the plan's own suite and flags, plus --live: the command that
    runs exactly this plan live (the plan-only flags dropped)."""
    args = list(plan_argv)
    if args and args[0] == "plan":
        args = args[1:]
    out: list[str] = []
    skip = 0
    for arg in args:
        if skip:
            skip -= 1
            continue
        name, eq, _ = arg.partition("=")
        if name in PLAN_ONLY:
            skip = 0 if eq else PLAN_ONLY[name]
            continue
        out.append(arg)
    if "--live" not in out:
        out.append("--live")
    return shlex.join(["scoreboard", "run", *out])
