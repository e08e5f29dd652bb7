"""Retrieval judgement from gold document ids: did the retriever find the documents that
hold the answer? Pure functions.

Gold ids come in three kinds. A list of documents: those that hold the answer. ``[]``:
no document holds it (a hole of the knowledge base), so there is nothing to retrieve and
retrieval is neither right nor wrong. ``None``: not known. Both of the last two are left
out of every retrieval figure, and counted, so that every rule and every ranking metric
is computed over the same queries.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ragaudit.errors import UserError

RetrievalRule = str  # same_set | any_hit | all_gold | recall@K

# Every gold document among those retrieved: for a top-k system with one gold document,
# the mean over queries is the Recall@k a user expects.
DEFAULT_RULE = "all_gold"

# recall@K's largest K: far more documents than any retriever returns for one question.
MAX_RECALL_K = 10_000

RULE_HELP = "all_gold (default), any_hit, same_set (the GRAMMAR paper's) or recall@K"


def check_rule(rule: str) -> str:
    """``rule`` if it names a retrieval rule, else a one-line error."""
    if rule in ("same_set", "any_hit", "all_gold"):
        return rule
    if rule.startswith("recall@") and rule[7:].isdigit():
        if 0 < int(rule[7:]) <= MAX_RECALL_K:
            return rule
        raise UserError(
            f"retrieval rule {rule!r}: K is a whole number from 1 to {MAX_RECALL_K:,} "
            "(the documents retrieved within which every gold document must be)"
        )
    raise UserError(f"retrieval rule {rule!r}: use all_gold, any_hit, same_set or recall@K")


def retrieval_correct(
    retrieved: Sequence[str],
    gold: Sequence[str] | None,
    rule: RetrievalRule = DEFAULT_RULE,
    *,
    failed: bool = False,
) -> bool | None:
    """Whether retrieval found the answer's documents: every gold document (``all_gold``,
    the default), at least one (``any_hit``), exactly the gold set (``same_set``, the
    GRAMMAR paper's rule, meant for top-1 retrieval), or every gold document within the
    top K (``recall@K``).

    None when there is nothing to judge: gold ids unknown (``None``) or no document
    holding the answer (``[]``). A response that ``failed`` (an error, a timeout)
    retrieved nothing because it did not run, which is never correct."""
    if not gold:
        return None
    if failed:
        return False
    if rule.startswith("recall@"):
        return set(gold) <= set(retrieved[: int(rule[7:])])
    got, want = set(retrieved), set(gold)
    if rule == "same_set":
        return got == want
    if rule == "any_hit":
        return bool(got & want)
    return want <= got


def unreachable(rule: RetrievalRule, retrieved: Sequence[str], gold: Sequence[str]) -> str | None:
    """Why ``rule`` could not count this retrieval correct whatever the retriever ranked
    first, or None. ``same_set`` with another number of documents retrieved than the gold
    ids name (a top-5 system is never right against one gold document); ``all_gold`` with
    fewer retrieved; ``recall@K`` with K, or the documents retrieved within it, fewer than
    the gold ids. Chunks of one document count once; a retrieval of nothing is a plain
    miss."""
    cut = int(rule[7:]) if rule.startswith("recall@") else None
    within = len(set(retrieved[:cut])) if cut is not None else len(set(retrieved))
    return unreachable_by_counts(rule, len(set(retrieved)), len(set(gold)), within)


def unreachable_by_counts(rule: RetrievalRule, got: int, want: int, within: int) -> str | None:
    """:func:`unreachable` from counts alone: the distinct documents retrieved (``got``),
    the distinct gold ids (``want``) and the distinct documents within ``recall@K``'s K
    (``within``), as an aggregate over a table gives them."""
    if not want or not got or rule == "any_hit":
        return None
    if rule == "same_set":
        if got > want:
            return "more documents retrieved than the gold ids name"
        if got < want:
            return "fewer documents retrieved than the gold ids name"
        return None
    if rule.startswith("recall@"):
        cut = int(rule[7:])
        if cut < want:
            return f"K = {cut} is smaller than the number of gold ids"
        got = within
    if got < want:
        return "fewer documents retrieved than the gold ids name"
    return None


@dataclass
class RuleFit:
    """Counts, per system, the judged retrievals a rule could never count correct
    (:func:`unreachable`), to warn that the rule does not fit the run."""

    rule: RetrievalRule
    judged: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    misfits: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))

    def add(self, system: str, retrieved: Sequence[str], gold: Sequence[str] | None) -> None:
        """Note one retrieval of ``system`` (queries without gold documents are skipped)."""
        if not gold:
            return
        self.judged[system] += 1
        why = unreachable(self.rule, retrieved, gold)
        if why is not None:
            self.misfits[(system, why)] += 1

    def add_counts(self, system: str, got: int, want: int, within: int, n: int = 1) -> None:
        """Note ``n`` retrievals of ``system`` alike in their counts
        (:func:`unreachable_by_counts`); those without gold documents are skipped."""
        if not want:
            return
        self.judged[system] += n
        why = unreachable_by_counts(self.rule, got, want, within)
        if why is not None:
            self.misfits[(system, why)] += n

    def warnings(self) -> list[str]:
        """One line per system and reason, with counts and what to use instead."""
        out = []
        for (system, why), n in sorted(self.misfits.items()):
            if self.rule == "same_set":
                instead = "use all_gold (every gold document retrieved) or recall@K"
            elif why.startswith("K ="):
                instead = "use a larger K"
            else:
                instead = "use any_hit, or ask the system for more documents"
            out.append(
                f"retrieval rule {self.rule}: {system}: in {n} of {self.judged[system]} "
                f"queries {why}, so retrieval could never be correct; {instead}"
            )
        return out
