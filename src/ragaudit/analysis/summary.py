"""The analysis output as typed models: what summary.json holds, field by field.

``ragaudit analyze`` builds a :class:`Summary` and writes it as summary.json; the report,
the command line and notebooks read it back into the same models. Every model and field
says what it means, so the JSON Schema generated from them (``docs/summary.schema.json``)
documents the file. Pure: no file is read or written here (``ragaudit.report.summary_file``
does that).

Undefined figures are ``null``, never NaN or infinity: the models refuse non-finite
numbers, so a summary that holds one cannot be built, written or read.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragaudit.frames import frame
from ragaudit.records.models import supported_version

SCHEMA_VERSION = 9  # 2: by_label, labels, weight_scan (issue 16); 3: by_source, documents;
# 4: reference_free (issue 18); 5: blame counts "system error" (a failed call, issue 36);
# 6: robustness_undefined, R null where it cannot be measured, and the blame's correct is
# the accuracy (issue 41)
# 7: stability (run --repeat N: pass rates and flaky queries, issue 38)
# 8: cost (money per step, per system answered, per accepted pair, per verified wording;
# issue 38, part 3)
# 9: lambda_study (accuracy and R with the share of queries in gap groups set by
# resampling whole groups; analyze --lambda-study, issue 39 part 3)

Outcome = Literal["answer", "retrieval"]
Tag = Literal["gap", "robust", "non-robust"]
Source = Literal["correct", "knowledge base", "retriever", "language model", "system error"]
SOURCES: tuple[Source, ...] = (
    "correct",
    "knowledge base",
    "retriever",
    "language model",
    "system error",
)
BlameRule = Literal["evidence", "convention", "mixed"]
LeftOutReason = Literal["unknown", "no document", "no retrieved ids"]
ComparedMetric = Literal["accuracy", "robustness", "accuracy_retrieval", "robustness_retrieval"]

Interval = tuple[float, float]


class _Model(BaseModel):
    """Frozen, strict about unknown fields, and without NaN or infinity."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Proportion(_Model):
    """k successes out of n trials, with their share and its 95% Wilson score interval."""

    value: float | None = Field(
        description="k / n; null when n is 0 (nothing to count, so the share is undefined) "
        "or when the figure cannot be measured (its reason is given beside it)"
    )
    k: int = Field(ge=0, description="successes: the queries or groups the figure counts")
    n: int = Field(ge=0, description="trials: every query or group the figure is over")
    ci95: Interval = Field(
        description="95% Wilson score interval [low, high] of the share; [0, 1] when n is 0"
    )

    def __str__(self) -> str:
        """``0.95 [0.90, 0.98]``, or ``n/a`` when nothing was counted.

        >>> share = Proportion(value=0.7, k=7, n=10, ci95=(0.3968, 0.8922))  # proportion(7, 10)
        >>> print(share)
        0.70 [0.40, 0.89]
        >>> print(Proportion(value=None, k=0, n=0, ci95=(0.0, 1.0)))
        n/a
        """
        if not self.n or self.value is None:
            return "n/a"
        low, high = self.ci95
        return f"{self.value:.2f} [{low:.2f}, {high:.2f}]"


class MeanInterval(_Model):
    """The mean of per-query scores in [0, 1], with a 95% interval (Wilson for 0/1 scores,
    else the normal approximation)."""

    value: float | None = Field(description="the mean; null when no query was scored")
    n: int = Field(ge=0, description="queries scored")
    ci95: Interval = Field(
        description="95% interval of the mean: Wilson where every score is 0 or 1 or all "
        "are equal, else the normal approximation clipped to [0, 1]; [0, 1] when no query "
        "was scored"
    )


class Blame(_Model):
    """Where the answers of one system and variant went wrong, counted query by query.

    An answer judged right is correct, so ``counts["correct"]`` is the accuracy's k; a
    refusal to a question that has no answer is right, and any other answer to it the
    language model's. A wrong answer is placed by evidence when the gold ids list the
    documents that state the answer; otherwise by the GRAMMAR convention (a wrong answer
    in a gap group is the knowledge base's, one whose retrieval was judged wrong the
    retriever's, any other the language model's)."""

    rule: BlameRule = Field(
        description="which rule decided: evidence, convention, or mixed (some queries each)"
    )
    counts: dict[Source, int] = Field(
        description="queries per source: correct (every answer judged right: the accuracy's "
        "k), knowledge base, retriever, language model, system error (the system failed: a "
        "timeout, an HTTP error; no answer to blame on a module; absent in files of schema "
        "4 and before)"
    )
    by_evidence: int = Field(
        ge=0, description="queries decided by the documents that state the answer"
    )
    by_convention: int = Field(ge=0, description="queries decided by the GRAMMAR convention")
    holes_answered: int = Field(
        ge=0,
        description="of the correct answers, those to answerable questions no document "
        "answers (decided by evidence): the system answered from elsewhere, its own "
        "knowledge or a leak",
    )


class VariantFigures(_Model):
    """Every figure of one system on one variant (one wording style) of the queries."""

    n_queries: int = Field(ge=0, description="queries analyzed (judged answers)")
    n_groups: int = Field(ge=0, description="semantic groups those queries belong to")
    n_errors: int = Field(
        0,
        ge=0,
        description="queries the system failed on (timeouts, HTTP errors), counted as wrong "
        "answers (0 in summaries written before errors were counted)",
    )
    groups: dict[Tag, int] = Field(
        description="semantic groups per tag: gap (every query wrong), robust (every query "
        "right), non-robust (the rest)"
    )
    accuracy: Proportion = Field(description="correct answers among the queries")
    robustness: Proportion = Field(
        description="R: correct answers among the queries outside gap groups; its value is "
        "null where R is undefined (robustness_undefined says why)"
    )
    robustness_undefined: str | None = Field(
        None,
        description="why R is undefined, or null: 'every group is a gap' (no query answered "
        "correctly), or 'one query per group' (no group outside the gaps has two queries, "
        "so none can be non-robust and R would be 1.00 by construction)",
    )
    gap_fraction: Proportion = Field(
        description="lambda: queries in gap groups among all, so accuracy = R x (1 - lambda); "
        "its value is null where robustness_undefined is 'one query per group' (a group of "
        "one query is a gap exactly when its answer is wrong)"
    )
    accuracy_retrieval: Proportion | None = Field(
        description="correct retrievals among the queries with a retrieval verdict, answers "
        "the judge failed on included; null when no query has one"
    )
    accuracy_retrieval_computed: Proportion | None = Field(
        None,
        description="the same over the questions whose answer is computed (a count, a "
        "total, a yes or no: gold ids 'computed', every document stating a fact it is "
        "computed from), reported apart: such an answer is stated by no single document, "
        "and a retrieval of a few documents rarely holds them all; they count in "
        "accuracy_retrieval too; null when no such query has a retrieval verdict",
    )
    retrieval_left_out: dict[LeftOutReason, int] = Field(
        default_factory=dict,
        description="queries without a retrieval verdict, left out of the retrieval figures, "
        "by why: gold ids unknown, no document holds the answer, or no retrieved ids",
    )
    robustness_retrieval: Proportion | None = Field(
        description="correct retrievals among the judged queries with a retrieval verdict "
        "outside gap groups; null when no judged query has a retrieval verdict; its value "
        "is null where robustness_undefined is 'one query per group'"
    )
    acc_retrieval_db: Proportion = Field(
        description="groups that are not gaps among all groups of this variant; its value "
        "is null where robustness_undefined is 'one query per group'"
    )
    accuracy_balanced: float | None = Field(
        None,
        description="the mean of per-group accuracies (every group weighs the same); null "
        "without queries",
    )
    blame: Blame | None = Field(
        None,
        description="where the answers went wrong; null only in summaries written before "
        "it was counted",
    )


class SystemFigures(_Model):
    """One system: its figures per variant, and the retrieval database across variants."""

    system: str = Field(description="the system's name")
    acc_retrieval_db: Proportion = Field(
        description="Acc_retrieval_db across variants: groups that are not a gap in every "
        "variant they appear in, among all groups; its value is null where every variant "
        "has one query per group"
    )
    knowledge_base_holes: Proportion | None = Field(
        None,
        description="groups whose answer no document states, among the groups whose gold "
        "ids say which documents state it (questions that have no answer are no hole, and "
        "are not counted); null without such evidence",
    )
    open_domain_groups: int | None = Field(
        None,
        description="groups the LLM-only system answers correctly in every query (their "
        "answers may come from the model's own knowledge); null without --llm-only",
    )
    acc_retrieval_db_closed_domain: Proportion | None = Field(
        None,
        description="Acc_retrieval_db without the open-domain groups; null without --llm-only "
        "and for the LLM-only system itself",
    )
    variants: dict[str, VariantFigures] = Field(description="figures per variant, by name")


class Side(_Model):
    """One side of a comparison: which system and variant, its value and its errors."""

    system: str = Field(description="the system")
    variant: str = Field(description="the variant (wording style)")
    value: float | None = Field(
        description="the metric on this side over the paired groups; null where undefined"
    )
    errors: int = Field(
        0,
        ge=0,
        description="queries this side failed on (timeouts, HTTP errors) among the paired "
        "groups, counted as wrong answers",
    )


class Comparison(_Model):
    """One metric compared between two sides, paired by semantic group: two variants of
    one system, or two systems on one variant."""

    metric: ComparedMetric = Field(
        description="accuracy or robustness of the answers, or of the retrievals "
        "(accuracy_retrieval, robustness_retrieval)"
    )
    a: Side = Field(description="side a")
    b: Side = Field(description="side b")
    difference: float | None = Field(
        description="a - b; null when the metric is undefined on a side"
    )
    ci95: Interval | None = Field(
        description="95% interval of the difference, from a bootstrap over groups; null when "
        "not tested"
    )
    p_value: float | None = Field(
        description="two-sided paired permutation p-value; null when not tested"
    )
    n_groups: int = Field(ge=0, description="semantic groups present on both sides")
    undefined: str | None = Field(
        None,
        description="why the metric could not be compared (``side a: ...``), or null",
    )
    verdict: str = Field(description="the comparison in one sentence a person can act on")

    def significant(self, alpha: float = 0.05) -> bool:
        """Whether the difference is significant at ``alpha``; never when not tested.

        >>> compared = Comparison(
        ...     metric="accuracy", a=Side(system="rag", variant="long", value=0.9),
        ...     b=Side(system="rag", variant="short", value=0.6), difference=0.3, ci95=(0.1, 0.5),
        ...     p_value=0.002, n_groups=12, verdict="rag: short is less accurate than long (...).")
        >>> compared.significant(), compared.significant(alpha=0.001)
        (True, False)
        """
        return self.p_value is not None and self.p_value < alpha


RankingMetrics = dict[str, MeanInterval]


class SystemRanking(_Model):
    """Ranking metrics of one system's retrieval against the gold ids: Recall@k, MRR and
    nDCG@k, each the mean over the queries whose gold ids name a document."""

    depth: int = Field(ge=1, description="the deepest retrieved list; cut-offs go up to it")
    variants: dict[str, RankingMetrics] = Field(
        description="per variant: metric name (recall@k, mrr, ndcg@k) -> mean"
    )
    labels: dict[str, RankingMetrics] = Field(
        description="per question label: metric name -> mean (empty without labels)"
    )


class Kappa(_Model):
    """An agreement coefficient (Fleiss' kappa) with its 95% bootstrap interval."""

    value: float | None = Field(
        description="kappa: 1 is full agreement, 0 what chance gives; null when undefined"
    )
    ci95: Interval | None = Field(
        description="95% percentile bootstrap interval over pairs; null when undefined"
    )
    n: int = Field(ge=0, description="pairs the coefficient is computed on")
    undefined: str | None = Field(None, description="why the coefficient is null, if it is")

    def __str__(self) -> str:
        """``0.43 [0.38, 0.48]``, or ``n/a`` with the reason.

        >>> print(Kappa(value=0.43, ci95=(0.38, 0.48), n=120))
        0.43 [0.38, 0.48]
        >>> print(Kappa(value=None, ci95=None, n=1, undefined="fewer than two pairs rated"))
        n/a (fewer than two pairs rated)
        """
        if self.value is None:
            return f"n/a ({self.undefined})"
        if self.ci95 is None:
            return f"{self.value:.2f}"
        return f"{self.value:.2f} [{self.ci95[0]:.2f}, {self.ci95[1]:.2f}]"


class RaterAgreement(_Model):
    """One rater against the majority of the others: "Know Your RAG"'s kappa(A_i, M - A_i)."""

    rater: str = Field(description="the rater (model:phrasing#sample, or a human label file)")
    kappa: Kappa = Field(description="Fleiss' kappa between the rater and the others' majority")
    discarded: int = Field(
        ge=0, description="pairs left out because the other raters have no strict majority"
    )
    confusion: dict[str, dict[str, int]] = Field(
        description="the others' majority label -> this rater's label -> pairs"
    )


class LabelFigures(_Model):
    """The question-type composition of the test set and how far its raters agree
    (``ragaudit label``; labels.jsonl)."""

    raters: list[str] = Field(description="every rater whose labels were read")
    pairs: int = Field(ge=0, description="(context, question) pairs labelled")
    labelled: int = Field(ge=0, description="pairs with a consensus (strict majority) label")
    no_majority: int = Field(ge=0, description="pairs whose raters tie: no consensus label")
    unknown_pairs: int = Field(
        0, ge=0, description="labelled pair ids that are not among the pairs (ignored)"
    )
    undecided: dict[str, int] = Field(
        description="per rater: pairs it gave no usable label (malformed replies, errors)"
    )
    composition: dict[str, Proportion] = Field(
        description="per label: its share of the pairs with a consensus label"
    )
    composition_answerable: dict[str, Proportion] | None = Field(
        None,
        description="the same over the pairs the set itself flags answerable; null when "
        "the set has no such flag",
    )
    unanswerable_recall: Proportion | None = Field(
        None,
        description="pairs the set flags unanswerable (SQuAD 2.0 is_impossible) that are "
        "labelled unanswerable; null without flags",
    )
    unanswerable_false_alarms: Proportion | None = Field(
        None,
        description="pairs the set flags answerable that are labelled unanswerable; null "
        "without flags",
    )
    fleiss: Kappa | None = Field(
        None,
        description="Fleiss' kappa over all raters, on the pairs every rater decided; null "
        "with one rater",
    )
    per_rater: list[RaterAgreement] = Field(
        default_factory=list, description="each rater against the others' majority"
    )


class ScanRow(_Model):
    """One row of the text-weight scan ("Know Your RAG", Table 2): the queries of one label,
    or all of them (``inclusive``)."""

    label: str = Field(description="the question label, or 'inclusive' for every query")
    n: int = Field(ge=0, description="queries in the row")
    recall: dict[str, MeanInterval] = Field(
        description="text weight (as written, e.g. '0.05') -> Recall@k at that weight"
    )
    dense: float | None = Field(None, description="Recall@k at weight 0 (dense only), if scanned")
    lexical: float | None = Field(
        None, description="Recall@k at weight 1 (lexical only), if scanned"
    )
    best_weight: float | None = Field(
        description="the weight with the highest Recall@k (the lowest on a tie); null with no "
        "queries"
    )
    best_recall: MeanInterval = Field(description="Recall@k at the best weight")
    at_inclusive_weight: MeanInterval = Field(
        description="Recall@k of these queries at the inclusive row's best weight"
    )
    difference: float | None = Field(
        description="best recall minus recall at the inclusive best weight (0 when the "
        "weights agree)"
    )
    difference_ci95: Interval | None = Field(
        description="95% paired bootstrap interval of that difference over the queries; "
        "null when the weights agree or there are no queries"
    )
    p_value: float | None = Field(
        None,
        description="exact sign test: queries that gain at the best weight vs queries that "
        "lose; null when the weights agree",
    )
    differs: bool = Field(
        description="the label gains significantly (p < 0.05) at its own best weight: tuned "
        "on all queries, it loses recall"
    )


class WeightScan(_Model):
    """Recall@k of a hybrid retriever (BM25 and dense, min-max normalized, mixed by the text
    weight) over several text weights, per label and for all queries (``ragaudit scan``)."""

    k: int = Field(ge=1, description="the cut-off of Recall@k")
    weights: list[float] = Field(description="the text weights scanned (0 dense, 1 lexical)")
    documents: int = Field(ge=0, description="documents in the corpus searched")
    queries: int = Field(ge=0, description="queries scanned")
    left_out: dict[str, int] = Field(
        default_factory=dict, description="queries not scanned, by reason"
    )
    rows: list[ScanRow] = Field(description="the inclusive row first, then one per label")
    notes: list[str] = Field(
        default_factory=list,
        description="labels whose best weight beats the inclusive one by more than the "
        "interval allows",
    )


class DrawSpread(_Model):
    """A figure over the draws of the lambda study: its mean, and the 2.5th and 97.5th
    percentiles of the draws (how much the choice of groups moves it, not a confidence
    interval of the data)."""

    mean: float = Field(description="the mean over the draws where the figure is defined")
    low: float = Field(description="the 2.5th percentile of the draws")
    high: float = Field(description="the 97.5th percentile of the draws")
    draws: int = Field(ge=1, description="the draws the figure is defined in")


class LambdaPoint(_Model):
    """One target lambda of one system and variant: its groups resampled to that share of
    queries in gap groups, and accuracy and R over the draws."""

    target: float = Field(ge=0, le=1, description="the share of queries in gap groups asked for")
    kept: Literal["gap", "non-gap"] | None = Field(
        description="the kind of group kept whole (the other kind is subsampled by whole "
        "groups, without replacement): the gap groups to raise lambda, the others to lower "
        "it; null where the target cannot be reached at all"
    )
    lambda_reached: DrawSpread | None = Field(
        description="lambda of the draws (whole groups seldom hit the target exactly); null "
        "where no draw was made"
    )
    accuracy: DrawSpread | None = Field(
        description="accuracy over the draws; null where the target is not reached "
        "(undefined says why)"
    )
    robustness: DrawSpread | None = Field(
        description="R over the draws where it is defined; null where the target is not "
        "reached or R is undefined in every draw (robustness_undefined says why)"
    )
    robustness_undefined: str | None = Field(
        None,
        description="why R is undefined in some draw or every draw ('every group is a gap', "
        "'one query per group'), or null",
    )
    undefined: str | None = Field(
        None, description="why this target is not reached, or null: its figures are null then"
    )


class LambdaSide(_Model):
    """The lambda study of one system and variant: what it holds, and one point per target."""

    groups: int = Field(ge=0, description="semantic groups of the system and variant")
    gap_groups: int = Field(ge=0, description="of them gap groups (every query wrong)")
    queries: int = Field(ge=0, description="queries of the system and variant")
    queries_in_gaps: int = Field(ge=0, description="of them in gap groups")
    observed_lambda: float | None = Field(
        description="lambda of all the groups (the summary's gap_fraction); null where it is "
        "undefined"
    )
    observed_accuracy: float = Field(description="accuracy of all the groups")
    observed_robustness: float | None = Field(
        description="R of all the groups; null where it is undefined"
    )
    undefined: str | None = Field(
        None,
        description="why lambda cannot be set here at all ('one query per group': a group of "
        "one query is a gap exactly when its answer is wrong), or null",
    )
    points: list[LambdaPoint] = Field(description="one per target, in the targets' order")


class LambdaStudy(_Model):
    """Accuracy and R of every system and variant with lambda (the share of queries in gap
    groups) set by resampling whole semantic groups: accuracy = R x (1 - lambda) falls as
    lambda rises while R does not, so accuracy compares systems or variants fairly only at
    one lambda (GRAMMAR's stratified sampling; ``analyze --lambda-study``)."""

    targets: list[float] = Field(description="the lambda values asked for, ascending")
    draws: int = Field(ge=1, description="draws per target, system and variant")
    seed: int = Field(ge=0, description="the seed the draws derive from")
    tolerance: float = Field(
        ge=0,
        description="a target is reached when the mean lambda of its draws is this close to it",
    )
    systems: dict[str, dict[str, LambdaSide]] = Field(
        description="per system, per variant: its study"
    )


class Distance(_Model):
    """The total variation distance between a label composition and the uniform one (half
    the summed absolute differences of the shares: 0 is uniform, 0.75 is one label only),
    with a 95% bootstrap interval."""

    value: float | None = Field(description="the distance; null when nothing was labelled")
    n: int = Field(ge=0, description="labels the composition is over")
    ci95: Interval = Field(description="95% percentile bootstrap interval; [0, 1] when n is 0")

    def __str__(self) -> str:
        """``0.42 [0.30, 0.55] (n=40)``, or ``n/a`` when nothing was labelled.

        >>> print(Distance(value=0.35, n=40, ci95=(0.22, 0.5)))
        0.35 [0.22, 0.50] (n=40)
        """
        if self.value is None:
            return "n/a (nothing labelled)"
        return f"{self.value:.2f} [{self.ci95[0]:.2f}, {self.ci95[1]:.2f}] (n={self.n})"


class CritiqueStat(_Model):
    """One critique's ratings over the candidates of one strategy and label."""

    mean: float | None = Field(description="mean rating 1-5; null when none was rated")
    passed: Proportion = Field(description="ratings at or above the critique's threshold")


class StrategyFigures(_Model):
    """What one generation strategy wrote from the documents, checked and labelled
    (candidates.jsonl)."""

    candidates: int = Field(ge=0, description="pairs written, accepted or dropped")
    accepted: int = Field(ge=0, description="pairs that passed every check")
    dropped: dict[str, int] = Field(description="dropped candidates by the check that failed")
    calls: int = Field(
        ge=0,
        description="LLM requests of the generation: each candidate's writing and checks "
        "(dropped ones included) and the accepted pairs' wordings, cached ones included",
    )
    tokens: int = Field(ge=0, description="their prompt and completion tokens")
    calls_per_pair: float | None = Field(
        description="LLM requests per accepted pair (calls / accepted); null when none was accepted"
    )
    tokens_per_pair: float | None = Field(
        description="tokens per accepted pair; null when none was accepted"
    )
    confusion: dict[str, dict[str, int]] = Field(
        description="requested label (``any`` for simple, which asks for none) -> the "
        "labeller's label -> candidates: the paper's Figure 2"
    )
    composition: dict[str, Proportion] = Field(
        description="the labeller's labels of the candidates it labelled, as shares"
    )
    distance: Distance = Field(description="how far that composition is from uniform")
    critiques: dict[str, dict[str, CritiqueStat]] = Field(
        description="label (requested; the labeller's for simple) -> critique -> ratings: "
        "the paper's Figure 3"
    )


class DocumentFigures(_Model):
    """Test sets generated from documents: per strategy, cost, labels and critiques."""

    strategies: dict[str, StrategyFigures] = Field(description="figures per strategy")


class AUROC(_Model):
    """How well a score separates right answers from wrong ones, whatever the threshold:
    the chance that a random right answer scores above a random wrong one (ties count
    half), with a 95% bootstrap interval. Undefined when one of the two kinds is absent."""

    value: float | None = Field(description="the area; null when it is undefined")
    ci95: Interval = Field(description="percentile bootstrap interval; [0, 1] when undefined")
    undefined: str | None = Field(None, description="why the area is undefined")


class PrecisionTarget(_Model):
    """The lowest threshold at which a metric's precision reaches the target."""

    target: float = Field(description="the precision asked for")
    threshold: float | None = Field(description="the threshold; null when none reaches it")
    precision: Proportion | None = Field(None, description="the precision at that threshold")
    recall: Proportion | None = Field(None, description="the recall at that threshold")
    undefined: str | None = Field(None, description="why no threshold reaches the target")


class ReliabilityCore(_Model):
    """A reference-free metric read as a verdict (score >= threshold: "correct") and set
    against the grounded verdicts of the same answers, positive = correct (GRAMMAR's
    Table 1): precision, recall, and the share of wrong answers it lets through."""

    responses: int = Field(ge=0, description="answers with both a score and a verdict")
    correct: int = Field(ge=0, description="of them, right by the grounded verdict")
    precision: Proportion = Field(
        description="of the answers the metric calls correct, the share that are"
    )
    recall: Proportion = Field(description="of the right answers, the share it calls correct")
    let_through: Proportion = Field(description="of the wrong answers, the share it calls correct")
    auroc: AUROC = Field(description="how well the score ranks right above wrong, any threshold")


class MetricReliability(ReliabilityCore):
    """One metric's reliability on one run: overall, by group tag and by label, with what
    could not be scored and the threshold a precision target needs."""

    metric: str = Field(description="the metric's name (faithfulness, answer_relevancy, ...)")
    threshold: float = Field(description="score at or above which the metric calls correct")
    mean_score: float | None = Field(description="mean of the defined scores; null if none")
    undefined: dict[str, int] = Field(
        description="answers whose score is undefined, by reason (never NaN, never guessed)"
    )
    unjudged: int = Field(ge=0, description="scored answers without a grounded verdict")
    for_precision: PrecisionTarget = Field(
        description="the threshold the configured precision target would need"
    )
    by_tag: dict[str, ReliabilityCore] = Field(
        description="per group tag (gap, non-robust, robust) of the answer's group"
    )
    by_label: dict[str, ReliabilityCore] = Field(description="per question label")
    sentence: str = Field(description="what the figures mean, in one plain sentence")


class ReferenceFreeFigures(_Model):
    """The reference-free metrics of a run and how far each can be trusted here."""

    systems: list[str] = Field(description="the systems whose answers were scored")
    metrics: dict[str, MetricReliability] = Field(
        description="per metric, over every scored answer of those systems"
    )
    by_system: dict[str, dict[str, MetricReliability]] = Field(description="per system, per metric")
    calls_per_response: dict[str, float | None] = Field(
        description="LLM requests per scored answer, per metric"
    )


# How a semantic group's answers vary when every wording is asked several times.
GroupStability = Literal[
    "always right", "always wrong", "fails in some wordings", "fails in some repeats"
]
GROUP_STABILITY: tuple[GroupStability, ...] = (
    "always right",
    "always wrong",
    "fails in some wordings",
    "fails in some repeats",
)


class QueryPassRate(_Model):
    """One query asked several times by one system (``run --repeat N``): how often its
    answer was right."""

    system: str = Field(description="the system")
    query_id: str = Field(description="the query")
    group_id: str = Field(description="its semantic group")
    variant: str = Field(description="its wording style")
    passes: int = Field(ge=0, description="judged askings whose answer was right")
    repeats: int = Field(ge=1, description="judged askings of the query")
    pass_rate: float = Field(ge=0, le=1, description="passes / repeats")
    ci95: Interval = Field(description="95% Wilson interval of the pass rate")
    flaky: bool = Field(description="right in some repeats and wrong in others")


class StabilityCore(_Model):
    """How stable one system's answers are over the queries of one variant, or of all
    variants: every query asked several times (``run --repeat N``), each asking judged."""

    queries: int = Field(ge=0, description="queries with at least one judged asking")
    answers: int = Field(ge=0, description="judged askings of those queries")
    mean_pass_rate: MeanInterval = Field(
        description="the mean over the queries of each query's pass rate (every query weighs "
        "the same), with a 95% interval that counts the semantic group as the unit (its "
        "wordings share one fact): a t interval from the spread between groups; the Wilson "
        "interval at the mean where that spread is nil or there is one group"
    )
    flaky: Proportion = Field(
        description="flaky queries (right in some repeats, wrong in others) among the "
        "queries judged at least twice"
    )
    always_right: int = Field(ge=0, description="queries right in every judged asking")
    always_wrong: int = Field(ge=0, description="queries wrong in every judged asking")
    groups: dict[GroupStability, int] = Field(
        description="semantic groups by how their answers vary: always right, always wrong, "
        "fails in some wordings (each wording gives the same verdict every time, but not "
        "all wordings the same: what robustness across wordings measures), fails in some "
        "repeats (some wording is flaky: the same question in the same words is right one "
        "time and wrong another)"
    )


class StabilityFigures(StabilityCore):
    """One system's answers asked several times (``run --repeat N``): over all its
    queries, per variant, and the flaky queries themselves."""

    system: str = Field(description="the system")
    repeats: int = Field(ge=1, description="the most judged askings of any one query")
    min_repeats: int = Field(
        ge=1,
        description="the fewest judged askings of any one query (below repeats where "
        "askings failed to be judged, or a run was cut short)",
    )
    variants: dict[str, StabilityCore] = Field(description="the same figures per variant")
    flaky_queries: list[QueryPassRate] = Field(
        description="the flaky queries, those whose pass rate is nearest one half first (at "
        "most 20; flaky.k says how many there are)"
    )


class SourceFigures(_Model):
    """The figures of the queries of one source (SQL-grounded or document-generated)."""

    systems: dict[str, SystemFigures] = Field(description="figures per system")
    comparisons: list[Comparison] = Field(
        default_factory=list,
        description="the paired comparisons among this source's queries only",
    )


class CostFigure(_Model):
    """A cost in US dollars, or null with the reason (a model with billed tokens and no
    known price): never a made-up 0."""

    usd: float | None = Field(
        ge=0, description="US dollars; null when a model with billed tokens has no known price"
    )
    reason: str | None = Field(None, description="why usd is null")
    note: str | None = Field(
        None, description="what the figure rests on (the embedded model costs 0)"
    )


class ModelCostFigures(_Model):
    """What one model was asked in one step, and what that cost at its price."""

    calls: int = Field(ge=0, description="requests the backend answered (billed)")
    cache_hits: int = Field(ge=0, description="requests the cache answered (free)")
    prompt_tokens: int = Field(ge=0, description="input tokens of the billed requests")
    completion_tokens: int = Field(ge=0, description="output tokens of the billed requests")
    cost: CostFigure = Field(description="the billed tokens at the model's price")
    price_input: float | None = Field(
        None, description="USD per million input tokens used; null without a price"
    )
    price_output: float | None = Field(
        None, description="USD per million output tokens used; null without a price"
    )
    price_source: str | None = Field(
        None, description="'llm.prices', the default table with its date, or 'embedded'"
    )


class StepCostFigures(_Model):
    """What one step's last run asked and cost (usage.json)."""

    calls: int = Field(ge=0, description="requests the backend answered (billed)")
    cache_hits: int = Field(ge=0, description="requests the cache answered (free)")
    prompt_tokens: int = Field(ge=0, description="input tokens of the billed requests")
    completion_tokens: int = Field(ge=0, description="output tokens of the billed requests")
    cost: CostFigure = Field(description="the sum of its models' costs")
    models: dict[str, ModelCostFigures] = Field(
        default_factory=dict, description="per model it asked (llm.model's names)"
    )


class UnitCost(_Model):
    """A cost divided over what it bought: ``cost`` over ``units`` is ``each``."""

    cost: CostFigure = Field(description="what was spent")
    units: int = Field(ge=0, description="what it bought: answers, pairs, wordings")
    each: CostFigure = Field(description="cost / units; null when units is 0")


class CostFigures(_Model):
    """What the run's LLM requests cost in money (usage.json at llm.prices over the
    default table): each step's last run, the total, and per unit of what it made."""

    basis: str = Field(
        description="what the figures count: each step's last run, billed requests only"
    )
    total: CostFigure = Field(description="the sum of the steps' costs, exactly")
    steps: dict[str, StepCostFigures] = Field(description="per step of the run that asked an LLM")
    per_system: dict[str, UnitCost] = Field(
        default_factory=dict,
        description="per system of the last run: its LLM requests' cost over its askings "
        "(queries times repeats) in that run",
    )
    per_document_pair: UnitCost | None = Field(
        None,
        description="the last generation from documents' cost over the pairs it accepted",
    )
    per_verified_wording: UnitCost | None = Field(
        None,
        description="the wording and verification steps' cost (templates, verify) over the "
        "wordings templates/text.yaml holds as verified",
    )


class Summary(_Model):
    """What ``ragaudit analyze`` found: summary.json.

    Figures per system and variant, where the answers went wrong, paired comparisons with
    their verdicts, and ranking metrics of retrieval. A summary.json written before
    ``schema_version`` existed reads as version 1."""

    schema_version: int = Field(
        SCHEMA_VERSION, ge=1, description="version of this format (absent: 1)"
    )
    outcome: Outcome = Field(
        "answer",
        description="what was analyzed as correct: the answers (judgements), or the "
        "retrievals (by the retrieval rule)",
    )
    retrieval_rule: str = Field(
        description="the rule the retrieval verdicts follow (the judge's, for judgements)"
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="where the figures need care: a rule that cannot fit the retrievals, "
        "variants without retrieval figures, variants whose R cannot be measured (one query "
        "per group), said once",
    )
    systems: dict[str, SystemFigures] = Field(description="figures per system, by name")
    judge_failed: dict[str, int] = Field(
        default_factory=dict,
        description="answers per system the LLM judge failed on, left out of every answer "
        "figure; their retrievals count in the retrieval figures (accuracy_retrieval, the "
        "ranking metrics), which need no judge",
    )
    comparisons: list[Comparison] = Field(
        default_factory=list,
        description="paired comparisons: the answers' first, then the retrievals'",
    )
    retrieval_ranking: dict[str, SystemRanking] = Field(
        default_factory=dict,
        description="ranking metrics per system that returned retrieved ids",
    )
    by_label: dict[str, dict[str, VariantFigures]] = Field(
        default_factory=dict,
        description="per system, per question label: the figures of the queries with that "
        "label (empty without labels)",
    )
    label_comparisons: list[Comparison] = Field(
        default_factory=list,
        description="within each system, each pair of labels compared on accuracy, paired "
        "by semantic group where groups have queries of both labels",
    )
    labels: LabelFigures | None = Field(
        None, description="the test set's label composition and agreement (labels.jsonl)"
    )
    weight_scan: WeightScan | None = Field(
        None, description="the text-weight scan (scan.json), if one was run"
    )
    lambda_study: LambdaStudy | None = Field(
        None,
        description="accuracy and R with the share of queries in gap groups set by "
        "resampling whole groups (analyze --lambda-study), if asked",
    )
    by_source: dict[str, SourceFigures] = Field(
        default_factory=dict,
        description="per source of the queries (sql, document), their own figures; empty "
        "when the dataset has queries of one source only",
    )
    documents: DocumentFigures | None = Field(
        None, description="generation from documents (candidates.jsonl), if it ran"
    )
    reference_free: ReferenceFreeFigures | None = Field(
        None,
        description="reference-free metrics (scores/) and their reliability against the "
        "grounded verdicts, if judge --reference-free ran",
    )
    stability: dict[str, StabilityFigures] = Field(
        default_factory=dict,
        description="per system asked each query several times (run --repeat N): each "
        "query's pass rate, their mean with its interval, the flaky queries and how the "
        "semantic groups vary, across wordings or across repeats; empty without repeats",
    )
    cost: CostFigures | None = Field(
        None,
        description="what the run's LLM requests cost in money, per step, per system "
        "answered, per accepted document pair and per verified wording (usage.json); null "
        "when no step has recorded its usage",
    )

    @field_validator("schema_version")
    @classmethod
    def _supported(cls, value: int) -> int:
        return supported_version(value, SCHEMA_VERSION)

    def rows(self) -> list[dict[str, Any]]:
        """Every proportion of :attr:`systems` as a row: system, variant (``all`` for the
        system-wide figures), metric, value, low, high, k, n. Undefined figures keep a null
        value.

        Examples:
            >>> Summary(retrieval_rule="any", systems={}).rows()
            []
            >>> from ragaudit.analysis.metrics import Example, analyze
            >>> examples = [Example("q1", "g1", "short", True, system="rag"),  # one query a group:
            ...             Example("q2", "g2", "short", False, system="rag")]  # R is undefined
            >>> summary = Summary(retrieval_rule="any", systems=analyze(examples).systems)
            >>> for row in summary.rows()[:3]:
            ...     print(row["system"], row["variant"], row["metric"], row["value"], row["n"])
            rag all acc_retrieval_db None 2
            rag short accuracy 0.5 2
            rag short robustness None 1
            >>> Summary.model_validate_json(summary.model_dump_json()) == summary  # summary.json
            True
        """
        out: list[dict[str, Any]] = []

        def add(system: str, variant: str, metric: str, p: Proportion | None) -> None:
            if p is not None:
                low, high = p.ci95
                out.append(
                    {
                        "system": system,
                        "variant": variant,
                        "metric": metric,
                        "value": p.value,
                        "low": low,
                        "high": high,
                        "k": p.k,
                        "n": p.n,
                    }
                )

        for name, figures in self.systems.items():
            add(name, "all", "acc_retrieval_db", figures.acc_retrieval_db)
            add(name, "all", "knowledge_base_holes", figures.knowledge_base_holes)
            add(
                name,
                "all",
                "acc_retrieval_db_closed_domain",
                figures.acc_retrieval_db_closed_domain,
            )
            for variant, v in figures.variants.items():
                for metric in _VARIANT_PROPORTIONS:
                    add(name, variant, metric, getattr(v, metric))
        return out

    def to_pandas(self) -> Any:
        """:meth:`rows` as a pandas DataFrame: one row per system x variant x metric, with
        columns system, variant, metric, value, low, high, k, n (n is what the figure is
        over: queries, or groups for robustness and Acc_retrieval_db)."""

        # Nullable floats: an undefined figure stays missing (<NA>), never becomes NaN.
        return frame(
            self.rows(),
            ["system", "variant", "metric", "value", "low", "high", "k", "n"],
            floats=["value", "low", "high"],
        )

    def comparisons_to_pandas(self) -> Any:
        """The paired comparisons (:attr:`comparisons`: which system or wording is worse,
        and by how much) as a pandas DataFrame, one row per comparison: metric, system_a,
        variant_a, value_a, system_b, variant_b, value_b, difference (a - b), low, high
        (its 95% interval), p_value, n_groups, significant (p < 0.05) and verdict, the
        comparison in one sentence. Untested or undefined figures stay null.

        Examples:
            >>> from ragaudit.analysis.comparisons import comparisons
            >>> from ragaudit.analysis.metrics import Example, analyze
            >>> examples = [Example(f"q{i}{v}", f"g{i}", v, v == "short" or i % 4 == 0)
            ...             for i in range(12) for v in ("short", "long")]
            >>> summary = Summary(retrieval_rule="any", systems=analyze(examples).systems,
            ...                   comparisons=comparisons(examples))
            >>> frame = summary.comparisons_to_pandas()
            >>> row = frame[frame.metric == "accuracy"].iloc[0]
            >>> row.variant_a, row.variant_b, float(row.difference), bool(row.significant)
            ('long', 'short', -0.75, True)
        """

        columns = ["metric", "system_a", "variant_a", "value_a", "system_b", "variant_b"]
        columns += ["value_b", "difference", "low", "high", "p_value", "n_groups"]
        columns += ["significant", "verdict"]
        rows = [
            {
                "metric": c.metric,
                "system_a": c.a.system,
                "variant_a": c.a.variant,
                "value_a": c.a.value,
                "system_b": c.b.system,
                "variant_b": c.b.variant,
                "value_b": c.b.value,
                "difference": c.difference,
                "low": c.ci95[0] if c.ci95 else None,
                "high": c.ci95[1] if c.ci95 else None,
                "p_value": c.p_value,
                "n_groups": c.n_groups,
                "significant": c.significant(),
                "verdict": c.verdict,
            }
            for c in self.comparisons
        ]
        floats = ["value_a", "value_b", "difference", "low", "high", "p_value"]
        return frame(rows, columns, floats)

    def ranking_to_pandas(self) -> Any:
        """The ranking metrics of retrieval (:attr:`retrieval_ranking`: Recall@k, MRR,
        nDCG@k against the gold ids) as a pandas DataFrame, one row per system x variant
        x metric: system, variant, metric, value (the mean over the queries with gold
        ids), low, high (its 95% interval), n (those queries). Empty where no system
        returned retrieved ids or no query has gold ids.

        Examples:
            >>> Summary(retrieval_rule="any", systems={}).ranking_to_pandas().columns.tolist()
            ['system', 'variant', 'metric', 'value', 'low', 'high', 'n']
        """

        rows = [
            {
                "system": system,
                "variant": variant,
                "metric": metric,
                "value": mean.value,
                "low": mean.ci95[0],
                "high": mean.ci95[1],
                "n": mean.n,
            }
            for system, ranking in self.retrieval_ranking.items()
            for variant, metrics in ranking.variants.items()
            for metric, mean in metrics.items()
        ]
        columns = ["system", "variant", "metric", "value", "low", "high", "n"]
        return frame(rows, columns, floats=["value", "low", "high"])

    def stability_to_pandas(self) -> Any:
        """How stable each system's answers are over repeated askings (:attr:`stability`,
        ``run --repeat N``) as a pandas DataFrame, one row per system x variant (``all``
        for the system over every variant): system, variant, queries, answers (judged
        askings), mean_pass_rate, low, high (its 95% interval), flaky (the share of flaky
        queries), flaky_low, flaky_high, flaky_k, flaky_n, and the groups per class
        (always right, always wrong, fails in some wordings, fails in some repeats).
        Empty without repeats.

        Examples:
            >>> from ragaudit.analysis.repeats import Attempt, stability
            >>> attempts = [Attempt("rag", f"q{g}", f"g{g}", "short", r, g == 0 or r % 2 == 0)
            ...             for g in range(3) for r in range(4)]
            >>> summary = Summary(retrieval_rule="any", systems={}, stability=stability(attempts))
            >>> row = summary.stability_to_pandas().iloc[0]
            >>> row.variant, float(row.mean_pass_rate), int(row.flaky_k), int(row.flaky_n)
            ('all', 0.6666666666666666, 2, 3)
        """

        columns = ["system", "variant", "queries", "answers", "mean_pass_rate", "low", "high"]
        columns += ["flaky", "flaky_low", "flaky_high", "flaky_k", "flaky_n", *GROUP_STABILITY]

        def row(system: str, variant: str, core: StabilityCore) -> dict[str, Any]:
            mean, flaky = core.mean_pass_rate, core.flaky
            return {
                "system": system,
                "variant": variant,
                "queries": core.queries,
                "answers": core.answers,
                "mean_pass_rate": mean.value,
                "low": mean.ci95[0],
                "high": mean.ci95[1],
                "flaky": flaky.value,
                "flaky_low": flaky.ci95[0],
                "flaky_high": flaky.ci95[1],
                "flaky_k": flaky.k,
                "flaky_n": flaky.n,
                **{kind: core.groups.get(kind, 0) for kind in GROUP_STABILITY},
            }

        rows = []
        for name, figures in self.stability.items():
            rows.append(row(name, "all", figures))
            rows += [row(name, v, core) for v, core in figures.variants.items()]
        floats = ["mean_pass_rate", "low", "high", "flaky", "flaky_low", "flaky_high"]
        return frame(rows, columns, floats)

    def lambda_to_pandas(self) -> Any:
        """The lambda study (:attr:`lambda_study`, ``analyze --lambda-study``) as a pandas
        DataFrame, one row per system x variant x target: system, variant, target, kept
        (the kind of group kept whole), lambda (the mean lambda the draws reached),
        accuracy, accuracy_low, accuracy_high, robustness, robustness_low,
        robustness_high (means over the draws, and the 2.5th and 97.5th percentiles of
        the draws), observed_lambda, observed_accuracy, observed_robustness (all the
        groups) and undefined (why a figure is null). Empty without a study.

        Examples:
            >>> from ragaudit.analysis.lambda_study import lambda_study
            >>> verdicts = {("rag", "short"): {f"g{i}": (3 * (i < 4), 3) for i in range(8)}}
            >>> summary = Summary(retrieval_rule="any", systems={},
            ...                   lambda_study=lambda_study(verdicts, [0.2, 0.9], draws=10))
            >>> summary.lambda_to_pandas()[["target", "lambda", "accuracy", "robustness"]]
               target  lambda  accuracy  robustness
            0     0.2     0.2       0.8         1.0
            1     0.9     1.0      <NA>        <NA>
            >>> print(summary.lambda_to_pandas().undefined[1])  # groups of 3: 0.8 or 1
            whole groups bring lambda no nearer than 1.000 to 0.9
        """

        floats = ["lambda", "accuracy", "accuracy_low", "accuracy_high", "robustness"]
        floats += ["robustness_low", "robustness_high", "observed_lambda", "observed_accuracy"]
        floats += ["observed_robustness"]
        columns = ["system", "variant", "target", "kept", *floats[:7], *floats[7:], "undefined"]

        def spread(value: DrawSpread | None) -> list[float | None]:
            return [None] * 3 if value is None else [value.mean, value.low, value.high]

        rows = []
        study = self.lambda_study
        for system, variants in (study.systems if study else {}).items():
            for variant, side in variants.items():
                for p in side.points:
                    cells = [system, variant, p.target, p.kept]
                    cells += [None if p.lambda_reached is None else p.lambda_reached.mean]
                    cells += spread(p.accuracy) + spread(p.robustness)
                    cells += [side.observed_lambda, side.observed_accuracy]
                    cells += [side.observed_robustness, p.undefined or p.robustness_undefined]
                    rows.append(dict(zip(columns, cells, strict=True)))
        return frame(rows, columns, floats)


# The proportions of a variant's figures, in the order tables show them.
_VARIANT_PROPORTIONS = (
    "accuracy",
    "robustness",
    "gap_fraction",
    "accuracy_retrieval",
    "robustness_retrieval",
    "acc_retrieval_db",
    "accuracy_retrieval_computed",
)


def summary_schema() -> dict[str, Any]:
    """The JSON Schema of summary.json, generated from :class:`Summary`.

    >>> schema = summary_schema()
    >>> schema["$schema"], schema["title"], schema["required"]
    ('https://json-schema.org/draft/2020-12/schema', 'Summary', ['retrieval_rule', 'systems'])
    """
    schema = Summary.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
