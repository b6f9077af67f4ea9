"""The report's summary and request accounting as typed models (see schema.py for the rest).

Field order follows the order the statistics write their keys, so a dump of a model reads in
the same order as the JSON it came from (the Markdown lists the judge-agreement block in that
order). Every figure that may be undefined (a rate with nothing judged, an interval of one
case, an unknown measurement) is Optional: unknown is null, never 0.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)

#: a JSON number kept as written: an integer stays an integer (token counts), a float a float
Num = StrictInt | StrictFloat


class Closed(BaseModel):
    """A shape scoreboard writes: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Open(BaseModel):
    """A shape others extend: unknown keys are kept as they are."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


# ---------------------------------------------------------------------------------------------
# Shared figures


class Interval(Closed):
    """An interval estimate; low/high are null when no draw defined the statistic."""

    low: StrictFloat | None
    high: StrictFloat | None
    level: StrictFloat | None = None
    method: StrictStr | None = None
    unit: StrictStr | None = None
    cases: StrictInt | None = None
    small_sample: StrictBool | None = None
    resamples: StrictInt | None = None
    undefined_draws: StrictInt | None = None
    #: Wilson on the effective number of cases: how many cases' worth of evidence the data held
    effective_cases: Num | None = None
    #: Student t with no spread: Wilson's bound on the share of cases that could differ was taken
    adjusted: StrictBool | None = None


class Detectable(Closed):
    """The smallest true difference the paired t test detects with `power` at `alpha`."""

    value: Num | None
    power: Num
    alpha: Num
    difference_sd: Num | None = None
    sd_from: StrictStr
    cases: StrictInt
    test: StrictStr


class KFigure(Closed):
    """pass@k or pass^k: the mean over cases of the unbiased per-case estimate."""

    value: Num
    cases: StrictInt
    ci: Interval | None = None


class MetricFigure(Closed):
    """issue 14: a mean over cases of per-case means in [0, 1] (a named metric, the case score, a
    reducer's figure), with its interval by case; value null when no attempt gave one."""

    value: Num | None
    cases: StrictInt
    attempts: StrictInt | None = None
    ci: Interval | None = None


class DerivedFigure(Closed):
    """issue 14: an expression over named metrics (its value from their means), with a case
    bootstrap interval; null when undefined."""

    value: Num | None
    expression: StrictStr
    cases: StrictInt
    ci: Interval | None = None
    note: StrictStr | None = None
    #: "sum": the expression is over the metrics' totals and `__count` (absent: over their means)
    aggregate: Literal["sum"] | None = None
    #: with aggregate sum: the attempts that ran (`__count`)
    attempts: StrictInt | None = None


class FieldsOver(Closed):
    """Field accuracy's denominator in attempts, and the errored attempts beside it."""

    graded_attempts: StrictInt
    errored_attempts: StrictInt


class FieldsOverall(Closed):
    """Every graded field of every case: correct / total, with an interval by case."""

    value: Num
    correct: StrictInt
    total: StrictInt
    ci: Interval | None = None


class Methods(Open):
    """The version of the statistics and, per method name, what it is in words."""

    version: StrictInt


class MeasurementSummary(Closed):
    """A measurement over attempts: what is known, what is not; total is null if any is unknown."""

    known_count: StrictInt
    unknown_count: StrictInt
    known_subtotal: Num | None
    total: Num | None
    mean: Num | None = None
    median: Num | None = None
    p95: Num | None = None


class Budget(Closed):
    """Run-wide limits; None is no limit."""

    max_requests: StrictInt | None = None
    max_cost_usd: Num | None = None
    max_tokens: StrictInt | None = None


class PossiblyBilled(Closed):
    """A request sent with no recorded end: it may have been billed, usage unknown."""

    id: StrictInt
    attempt: list[Any]
    role: StrictStr | None = None
    usage: StrictStr
    #: a batched request's custom id (its batch was cancelled, or its submission is unknown)
    custom_id: StrictStr | None = None


class Requests(Closed):
    """Every request the run sent (subjects, judges, retries) against its budget."""

    sent: StrictInt
    completed: StrictInt
    failed: StrictInt
    unknown_usage: StrictInt = 0
    by_role: dict[str, StrictInt] = {}
    #: known usage plus the bound of each request whose usage is unknown
    tokens_spent: StrictInt = 0
    #: true when some request's usage is unknown and had no bound: tokens_spent misses it
    tokens_partial: StrictBool = False
    tokens_missing_requests: StrictInt = 0
    #: null when some request's cost is unknown (no price) and had no bound: never 0.0 for unknown
    cost_spent_usd: Num | None = 0.0
    #: the known part of the cost (known costs plus bounds charged), beside cost_spent_usd
    cost_known_usd: Num | None = None
    cost_unknown_requests: StrictInt = 0
    budget: Budget | None = None
    exhausted: StrictStr | None = None
    pending_unresolved: StrictInt = 0
    possibly_billed: list[PossiblyBilled] = []
    #: batched requests submitted and not answered yet (a waiting run): the totals are partial
    batch_pending: StrictInt | None = None


# ---------------------------------------------------------------------------------------------
# Per variant


class RunRate(Closed):
    run: StrictInt
    attempts: StrictInt
    passed: StrictInt
    pass_rate: StrictFloat | None


class CategoryRate(Closed):
    attempts: StrictInt
    passed: StrictInt
    pass_rate: StrictFloat | None


class VariantSummary(Closed):
    """Counts, pass rates (overall with a case-level interval, per run), stability, fields,
    categories and measurements of one variant."""

    attempts: StrictInt
    cases: StrictInt | None = None
    passed: StrictInt
    failed: StrictInt
    errors: StrictInt
    unassessed: StrictInt = 0
    not_run: StrictInt = 0
    interrupted: StrictInt = 0
    #: attempts waiting on a provider batch (a waiting run; absent: none)
    waiting: StrictInt | None = None
    pass_rate: StrictFloat | None
    pass_rate_ci: Interval | None = None
    per_run: list[RunRate] = []
    mean_pass_rate: StrictFloat | None = None
    min_pass_rate: StrictFloat | None = None
    case_stability: dict[str, StrictFloat] | None = None
    flaky_cases: list[StrictStr] | None = None
    field_accuracy: dict[str, StrictFloat] = {}
    by_category: dict[str, CategoryRate] = {}
    measurements: dict[str, MeasurementSummary] = {}
    #: attempts whose provider reported more usage than a request allowed (absent: none)
    usage_over_bound: StrictInt | None = None
    pass_at_k: dict[str, KFigure] | None = None
    pass_hat_k: dict[str, KFigure] | None = None
    field_accuracy_over: FieldsOver | None = None
    field_accuracy_overall: FieldsOverall | None = None
    # issue 14: record-only attempts, case scores, named and derived metrics, reducers over runs
    not_graded: StrictInt | None = None
    score: MetricFigure | None = None
    metrics: dict[str, MetricFigure] | None = None
    derived_metrics: dict[str, DerivedFigure] | None = None
    reducers: dict[str, MetricFigure | None] | None = None


# ---------------------------------------------------------------------------------------------
# Comparisons


class McNemar(Closed):
    b01: StrictInt
    b10: StrictInt
    p: StrictFloat


class FieldComparison(Open):
    """The paired figures of one graded field; the page shows any further figure as a column."""

    cases: StrictInt
    a_wins: StrictInt
    b_wins: StrictInt
    ties: StrictInt
    sign_test_p: StrictFloat | None = None
    mean_difference: StrictFloat | None = None
    mean_difference_ci: Interval | None = None
    detectable_difference: Detectable | None = None


class Comparison(Closed):
    """Variant a against variant b, case by case (paired)."""

    a: StrictStr
    b: StrictStr
    differs_in: list[StrictStr] = []
    cases: StrictInt
    a_wins: StrictInt
    b_wins: StrictInt
    ties: StrictInt
    discordant: StrictInt | None = None
    sign_test_p: StrictFloat | None = None
    mcnemar: McNemar | None = None
    mean_difference: StrictFloat | None = None
    mean_difference_ci: Interval | None = None
    detectable_difference: Detectable | None = None
    fields: dict[str, FieldComparison] = {}
    field_flags: list[StrictStr] = []
    flags: list[StrictStr] = []
    headline: StrictStr = ""
    #: issue 14: named metrics and the case score, compared case by case like the pass rate
    metrics: dict[str, FieldComparison] | None = None
    score: FieldComparison | None = None


class NotMeasured(Closed):
    what: StrictStr
    why: StrictStr


# ---------------------------------------------------------------------------------------------
# Model-graded evaluation


class RubricScore(Closed):
    """A variant's mean rubric-score on its scale, case as the unit, with its interval."""

    mean: StrictFloat
    cases: StrictInt
    scores: StrictInt
    ci: Interval | None = None
    small_sample: StrictBool = False


class RubricMean(Closed):
    mean: Num
    scale: list[Num]
    cases: StrictInt
    ci: Interval | None = None


class InstrumentShare(Closed):
    value: Num | None
    count: StrictInt
    of: StrictInt
    ci: Interval | None = None
    ties: StrictInt | None = None
    unjudged_pairs: StrictInt | None = None
    note: StrictStr | None = None
    unit: StrictStr | None = None


class InstrumentPosition(Closed):
    first_share: Num | None
    answers: StrictInt
    first: StrictInt
    p: Num | None
    alpha: Num
    biased: StrictBool
    test: StrictStr


class InstrumentSummary(Closed):
    """The judge's instrument check (the check stage): see stats/instrument.py."""

    judge_hash: StrictStr
    grader: Any = None
    repeats: StrictInt
    conditions: list[StrictStr]
    reasons: list[StrictStr] = []
    accuracy: InstrumentShare | None = None
    self_agreement: InstrumentShare | None = None
    judge_failures: StrictInt | None = None
    position: InstrumentPosition | None = None
    pairwise_accuracy: InstrumentShare | None = None
    passed: StrictBool
    status: StrictStr


class JudgeVariant(Closed):
    """Judge usage (apart from the subjects'), failures, self-agreement, pointwise means."""

    judged: StrictInt
    judge_failures: StrictInt
    no_majority: StrictInt = 0
    usage: dict[str, MeasurementSummary] = {}
    self_agreement: StrictFloat | None = None
    pointwise: dict[str, StrictFloat] | None = None
    pointwise_ci: dict[str, Interval | None] | None = None
    #: rubric-score means by scale ("1-5"): each case's runs averaged, then the cases
    rubric_scores: dict[str, RubricScore] | None = None
    #: rubric-score: the mean score on the rubric's own scale (case = unit), with its interval
    rubric: RubricMean | None = None


class QualityDifference(Closed):
    """dQ: the mean paired difference of blind pointwise quality between two variants."""

    a: StrictStr
    b: StrictStr
    cases: StrictInt
    dq: StrictFloat
    ci: Interval | None = None
    detectable_difference: Detectable | None = None
    scale: StrictStr = ""
    small_sample: StrictBool = False
    flags: list[StrictStr] = []


class PairwiseSummary(Closed):
    """Pairwise judging of one pair: per-case wins, ties, position consistency."""

    a: StrictStr
    b: StrictStr
    cases: StrictInt
    a_wins: StrictInt
    b_wins: StrictInt
    ties: StrictInt
    comparisons: StrictInt | None = None
    judge_failures: StrictInt = 0
    position_consistency: StrictFloat | None = None
    sign_test_p: StrictFloat | None = None
    usage: dict[str, MeasurementSummary] = {}
    note: StrictStr = ""
    small_sample: StrictBool = False
    flags: list[StrictStr] = []


class JudgeSummary(Closed):
    variants: dict[str, JudgeVariant] = {}
    dq: list[QualityDifference] | None = None
    pairwise: list[PairwiseSummary] | None = None


class RatingCount(Closed):
    rated: StrictInt
    unassessed: StrictInt


class ReviewCounts(Closed):
    """Reviews of one kind (human or model), counted: no aggregate score is made from them."""

    entries: StrictInt
    outputs: StrictInt
    cases: StrictInt
    reviewers: StrictInt
    with_verdict: StrictInt
    rubric_versions: list[StrictStr] = []
    ratings: dict[str, RatingCount] = {}


class ReviewSummary(Closed):
    human: ReviewCounts | None = None
    model: ReviewCounts | None = None
    outputs_in_report: StrictInt
    note: StrictStr = ""


class JudgePassRate(Closed):
    value: StrictFloat | None
    passed: StrictInt
    judged: StrictInt
    unit: StrictStr


class CorrectedRate(Closed):
    """The judge's pass rate corrected for its errors (Rogan-Gladen); why, when undefined."""

    value: StrictFloat | None
    ci: Interval | None = None
    why: StrictStr | None = None


class VariantAgreement(Closed):
    judge_pass_rate: JudgePassRate
    corrected_pass_rate: CorrectedRate


class JudgeAgreement(Closed):
    """How the judge's verdicts compare with human verdicts on the same outputs."""

    graders: list[StrictStr]
    n: StrictInt
    unit: StrictStr
    cases: StrictInt | None = None
    excluded: dict[str, StrictInt]
    confusion: dict[str, dict[str, StrictInt]]
    observed_agreement: StrictFloat
    kappa: StrictFloat | None
    true_positive_rate: StrictFloat | None
    false_positive_rate: StrictFloat | None
    specificity: StrictFloat | None
    judge_pass_rate: JudgePassRate
    corrected_pass_rate: CorrectedRate
    by_variant: dict[str, VariantAgreement] = {}
    truth: StrictStr
    formula: StrictStr
    method: StrictStr
    small_sample: StrictBool
    note: StrictStr | None = None


# ---------------------------------------------------------------------------------------------
# Agent tasks (stats/tasks.py)


class TaskRate(Closed):
    """A share of task attempts (utility, attack success) with its interval by case."""

    value: StrictFloat
    hits: StrictInt
    attempts: StrictInt
    cases: StrictInt
    ci: Interval | None = None
    note: StrictStr | None = None


class TaskFigure(Closed):
    """A per-attempt figure summed over the attempts that reported it (unknown is not 0)."""

    known_subtotal: StrictInt
    known_count: StrictInt
    unknown_count: StrictInt
    mean: Num | None = None


class TaskVariant(Closed):
    """One variant's agent-task figures."""

    mode: StrictStr
    attempts: StrictInt
    errors: StrictInt
    not_assessed: StrictInt
    not_assessed_reasons: dict[str, StrictInt] = {}
    isolated_attempts: StrictInt
    not_isolated_attempts: StrictInt
    benign_utility: TaskRate | None = None
    utility_under_attack: TaskRate | None = None
    attack_success_rate: TaskRate | None = None
    per_attempt: dict[str, TaskFigure] = {}


class TaskSummary(Closed):
    """Benign utility, utility under attack and attack success rate per variant."""

    variants: dict[str, TaskVariant] = {}
    method: StrictStr


# ---------------------------------------------------------------------------------------------
# The summary


class Summary(Closed):
    """Figures computed from the plan and attempts alone (so `verify` can recompute them)."""

    variants: dict[str, VariantSummary] = {}
    comparisons: list[Comparison] = []
    not_measured: list[NotMeasured] = []
    judges: JudgeSummary | None = None
    reviews: ReviewSummary | None = None
    judge_agreement: JudgeAgreement | None = None
    methods: Methods | None = None
    #: agent tasks (stats/tasks.py)
    tasks: TaskSummary | None = None
    instrument: InstrumentSummary | None = None
