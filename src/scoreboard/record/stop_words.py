"""What finishes a stopped run, said alike by the terminal and the Markdown report.

A spent budget is the run's own: `scoreboard run --resume` takes no budget flag, keeps the
budget and counts what the run spent, so a used-up budget sends nothing more on a resume."""

from __future__ import annotations

#: the budget a stop reason names, the flag and the suite key that set it
BUDGETS = (("request budget", "--max-requests", "max_requests"), ("token budget", "--max-tokens", "max_tokens"),
           ("cost budget", "--max-cost", "max_cost_usd"))


def larger_budget(reason: str | None, quote: str = "") -> str | None:
    """For a run a budget stopped: "a larger --max-requests (or budget.max_requests)" (each name
    between `quote`s); None for any other stop."""
    if not (reason or "").startswith("budget:"):
        return None
    named = next(((flag, key) for what, flag, key in BUDGETS if what in reason), None)
    if named is None:
        return "a larger budget"
    return f"a larger {quote}{named[0]}{quote} (or {quote}budget.{named[1]}{quote})"


def resume_words(reason: str | None, quote: str = "`") -> str:
    """The sentence on finishing a stopped run (the Markdown report's; the page's with no `quote`)."""
    larger = larger_budget(reason, quote)
    if larger:
        return (f"{quote}scoreboard run --resume{quote} keeps this budget and counts what the run spent, so a "
                f"used-up budget sends nothing more: run the suite again with {larger}.")
    return f"{quote}scoreboard run --resume{quote} on this run's folder finishes it."
