"""Names the record defines and every layer shares (the measurements an attempt carries, the
graders whose verdicts are a model's judgment)."""

from __future__ import annotations

#: the measurements of an attempt; each may be null (unknown), never a stand-in 0
MEASUREMENT_KEYS = ("latency_ms", "input_tokens", "output_tokens", "cost_usd", "requests")
#: graders that call a model: not recomputable offline; `rescore` needs --allow-judge
JUDGE_GRADER_NAMES = frozenset({"llm-judge", "rubric-score", "pointwise", "pairwise", "classify", "g-eval",
                                "inspect-model-graded"})
#: how a pairwise comparison never sent to the judge begins (an output had no screenshot)
NOT_SHOWN = "no screenshot to judge"
#: the renderings of a report, and the file extension of each
FORMATS = ("json", "md", "html", "junit")
#: the statuses a run can end (or be checkpointed) with: the report's run.status, the history's filter
RUN_STATUSES = ("completed", "stopped", "running", "waiting")
#: how every rendering marks a dry run (outputs from the mock subject, gates skipped)
DRY_RUN_MARK = "DRY RUN (mock subject)"
DRY_RUN_NOTE = ("every subject and judge was replaced by the mock subject: these outputs are not the system's, "
                "no model was called, and gates were skipped")
EXTENSIONS = {"json": ".json", "md": ".md", "html": ".html", "junit": ".junit.xml"}
