"""The report's model-graded figures as typed models: rubric scores, the judge's instrument
check, pairwise preferences and dQ, human reviews, judge-human agreement (see schema_summary.py)."""

from __future__ import annotations

from typing import Any

from pydantic import StrictBool, StrictFloat, StrictInt, StrictStr

from .schema_base import Closed, Detectable, Interval, MeasurementSummary, Num


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


class ChoiceCounts(Closed):
    """How often the judge picked each choice of a record-only classify grader in one variant:
    `attempts` grades in all, `no_choice` of them without a choice (judge failure, no majority)."""

    counts: dict[str, StrictInt]
    no_choice: StrictInt
    attempts: StrictInt


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
    #: record-only classify graders (OpenAI Evals' counts/<choice>), by label
    choices: dict[str, ChoiceCounts] | None = None


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
