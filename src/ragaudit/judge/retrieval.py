"""Retrieval judgement from gold document ids: did the retriever find the documents that
hold the answer? Pure functions."""

from __future__ import annotations

from ragaudit.errors import UserError

RetrievalRule = str  # same_set | any_hit | all_gold | recall@K


def check_rule(rule: str) -> str:
    """``rule`` if it names a retrieval rule, else a one-line error."""
    if rule in ("same_set", "any_hit", "all_gold"):
        return rule
    if rule.startswith("recall@") and rule[7:].isdigit() and int(rule[7:]) > 0:
        return rule
    raise UserError(f"retrieval rule {rule!r}: use same_set, any_hit, all_gold or recall@K")


def retrieval_correct(
    retrieved: list[str],
    gold: list[str] | None,
    rule: RetrievalRule = "same_set",
    *,
    failed: bool = False,
) -> bool | None:
    """Whether retrieval found the answer's documents: the same set (the paper's rule), at
    least one gold document, every gold document, or every gold document within the top K
    (``recall@K``). None when there are no gold ids.

    Empty gold ids (``[]``) mean the knowledge base holds no document for the answer: a
    retrieval that returns nothing is then correct. A response that ``failed`` (an error,
    a timeout) retrieved nothing because it did not run, which is never correct."""
    if gold is None:
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
