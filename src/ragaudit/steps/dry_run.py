"""``--dry-run`` of ``generate``, ``run`` and ``judge``: the LLM requests, tokens and cost a
step would spend, counted before anything is asked, and nothing written (no lock, no
provenance, no cache file made).

Each step counts what its resume would leave to do, by the same rules as the step:

- ``judge``: the answers without a judgement that stands, less those the deterministic
  matchers decide (run here: they are pure) and the repeats that reuse a verdict; each
  remaining one's exact request is looked up in the judge model's cache, so a rerun whose
  requests are all stored says 0.
- ``run``: the askings without a response (``--rerun``: all; ``--retry-errors``: the
  failed ones too), times the LLM requests a built-in system makes per asking; their
  prompts depend on retrieval, so which of them the cache holds is not known: all are
  counted as billed (an upper figure).
- ``generate``: the SQL half asks no LLM (its wordings are written and verified by
  ``templates text`` and ``templates verify``); from documents, the requests per accepted
  pair measured by the last generation (documents.stats.json), or the stated figures of
  docs/documents.md, and 0 where the same generation's replies are all in the cache.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ragaudit.config import Config, SystemConfig
from ragaudit.documents.options import DocumentOptions
from ragaudit.errors import UserError
from ragaudit.judge.cascade import judged_under
from ragaudit.judge.llm_judge import judge_prompt
from ragaudit.judge.matchers import match
from ragaudit.judge.retrieval import DEFAULT_RULE, RetrievalRule
from ragaudit.llm.estimate import CacheProbe, DryRun, EstimateLine, priced_line
from ragaudit.llm.options import LLMConfig
from ragaudit.llm.tokens import estimate_tokens
from ragaudit.llm.types import GenerationParams, Messages
from ragaudit.records.io import read_jsonl
from ragaudit.records.models import (
    Judgement,
    QueryRecord,
    RepeatJudgement,
    RepeatResponse,
    ResponseRecord,
)
from ragaudit.rundir import RunDir, safe_filename
from ragaudit.steps.judge import query_key, repeat_key, standing
from ragaudit.steps.run import llm_model_of, repeats_of
from ragaudit.steps.session import cache_path_of
from ragaudit.store.records import read_dataset
from ragaudit.systems.answer_prompts import answer_instructions
from ragaudit.systems.base import System
from ragaudit.systems.builtin import BuiltinSystemConfig

# A verdict's reply when no call of the model has been measured: a JSON verdict with a
# one-sentence reason, or the verdict alone (reasons=False).
JUDGE_REPLY_TOKENS = {True: 60, False: 12}
# A built-in system's request when none has been measured: the question, its passages (a
# window of chunk_size words at 4/3 tokens a word each) and the instructions in; a short
# answer out.
TOKENS_PER_WORD = 4 / 3
ANSWER_INSTRUCTION_TOKENS = 150
ANSWER_REPLY_TOKENS = 64
# Requests and tokens per accepted pair measured on SQuAD paragraphs without wordings
# (docs/documents.md): what a generation from documents is estimated at before one ran.
PAIR_COST = {"statements": (11.6, 5082.0), "simple": (3.4, 1647.0)}
# The share of a call's tokens that are its prompt, when no call was measured.
PROMPT_SHARE = 0.8


def _params(llm: LLMConfig) -> GenerationParams:
    return GenerationParams(temperature=llm.temperature, max_tokens=llm.max_tokens, seed=llm.seed)


def _prompt_tokens(messages: Messages) -> int:
    """The tokens of a request's messages, estimated high (:func:`estimate_tokens`)."""
    return sum(estimate_tokens(m["content"]) for m in messages)


def _measured(probe: CacheProbe) -> str | None:
    found = probe.mean_tokens()
    if found is None:
        return None
    return f"mean of {found[2]} calls of {probe.config.model} in its cache"


def dry_run_judge(
    config: Config,
    run: RunDir,
    *,
    use_llm: bool = True,
    systems: list[str] | None = None,
    samples: int = 1,
    reasons: bool = True,
    closed_domain: bool = False,
    rule: RetrievalRule = DEFAULT_RULE,
) -> DryRun:
    """What ``judge`` would ask ``config.llm.model`` (the judge), per system: the exact
    requests of the answers its matchers leave undecided, each looked up in the model's
    cache (a stored one is free, its tokens known). The prompt tokens of the others are
    estimated from their text (high), their replies at the mean of the model's cached
    calls, else :data:`JUDGE_REPLY_TOKENS`."""
    folder = run.responses_dir
    files = sorted(folder.glob("*.jsonl")) if folder.exists() else []
    if not files:
        raise UserError(f"nothing to judge: no responses in {folder} (run ragaudit run first)")
    if systems:
        wanted = {safe_filename(name) for name in systems}
        files = [f for f in files if f.stem in wanted]
    if not run.dataset.exists():
        raise UserError(f"no dataset at {run.dataset}: run ragaudit generate first")
    queries = read_dataset(run).by_id
    model = config.llm.model
    base = _params(config.llm)
    if samples > 1:
        sampled = base.model_copy(update={"temperature": 0.7})
        params = [
            sampled.model_copy(update={"sample_index": i, "seed": (sampled.seed or 0) + i})
            for i in range(samples)
        ]
    else:
        params = [base]
    dry = DryRun(step="judge")
    under = judged_under(closed_domain, rule)
    with CacheProbe(cache_path_of(config, run, model) if use_llm else None, config.llm) as probe:
        measured = _measured(probe)
        mean = probe.mean_tokens()
        reply = mean[1] if mean else JUDGE_REPLY_TOKENS[reasons]
        for path in files:
            responses = list(read_jsonl(path, ResponseRecord))
            if not responses:
                continue
            name = responses[0].system
            todo = _to_judge(run, name, responses, queries, use_llm, under)
            billed = cached = 0
            prompt = completion = 0.0
            for query, response in todo:
                if not use_llm or response.error is not None:
                    continue
                decision = match(query.reference, response.response, question=query.query)
                if decision.decided:
                    continue
                messages = judge_prompt(
                    query.query,
                    query.reference.display,
                    response.response or "",
                    reasons=reasons,
                    note=decision.why,
                )
                for p in params:
                    if probe.tokens(messages, p) is not None:
                        cached += 1
                    else:
                        billed += 1
                        prompt += _prompt_tokens(messages)
                        completion += reply
            how = (
                "no LLM: judge --no-llm"
                if not use_llm
                else "prompts estimated from their text; replies "
                + (measured or f"estimated at {JUDGE_REPLY_TOKENS[reasons]} tokens")
            )
            dry.lines.append(
                priced_line(
                    what=f"judge {name}",
                    model=model if use_llm else None,
                    items=len(todo),
                    requests=billed,
                    cached=cached,
                    prompt_tokens=prompt,
                    completion_tokens=completion,
                    tokens_from=how,
                    prices=config.llm.prices,
                )
            )
    dry.notes.append(
        "answers the matchers decide, and repeats identical to an answer judged, ask nothing; "
        "a reply that cannot be read is re-asked (not counted)"
    )
    return dry


def _to_judge(
    run: RunDir,
    name: str,
    responses: list[ResponseRecord],
    queries: Mapping[str, QueryRecord],
    use_llm: bool,
    under: str,
) -> list[tuple[QueryRecord, ResponseRecord]]:
    """The answers of system ``name`` that ``judge`` would judge now (read only): those
    without a judgement that stands under the rules ``under``, and the repeats whose
    answer no verdict covers."""
    digests = {r.query_id: r.digest for r in responses}
    answered = {r.query_id for r in responses if r.error is None}
    judged: list[Judgement] = []
    if run.judgements(name).exists():
        judged = list(read_jsonl(run.judgements(name), Judgement))
    kept = standing(judged, query_key, answered, use_llm, digests, queries, under)
    done = {j.query_id for j in kept}
    todo = [
        (queries[r.query_id], r)
        for r in responses
        if r.query_id not in done and r.query_id in queries
    ]
    repeats_path = run.repeat_responses(name)
    if not repeats_path.exists():
        return todo
    repeats = list(read_jsonl(repeats_path, RepeatResponse))
    rep_judged: list[RepeatJudgement] = []
    if run.repeat_judgements(name).exists():
        rep_judged = list(read_jsonl(run.repeat_judgements(name), RepeatJudgement))
    rep_kept = standing(
        rep_judged,
        repeat_key,
        {(r.query_id, r.repeat) for r in repeats if r.error is None},
        use_llm,
        {(r.query_id, r.repeat): r.digest for r in repeats},
        queries,
        under,
    )
    rep_done = {repeat_key(j) for j in rep_kept}
    # The verdicts a repeat can reuse: those standing, and those this judge gives first.
    known = {(j.query_id, j.response_digest) for j in [*kept, *rep_kept] if j.response_digest}
    known |= {(r.query_id, r.digest) for _, r in todo}
    for r in repeats:
        key = (r.query_id, r.digest)
        if (r.query_id, r.repeat) in rep_done or key in known or r.query_id not in queries:
            continue
        known.add(key)
        todo.append((queries[r.query_id], r))
    return todo


def dry_run_run(
    config: Config,
    run: RunDir,
    systems: Sequence[SystemConfig | System],
    *,
    limit: int | None = None,
    retry_errors: bool = False,
    rerun: bool = False,
    repeat: int | None = None,
) -> DryRun:
    """What ``run`` would ask, per system: the askings its resume leaves (queries times
    repeats), and for a built-in system the LLM requests they make (an answer each, and a
    request per re-ranked candidate), their tokens measured from the system's earlier
    answers, else from its model's cached calls, else estimated (stated). A system that
    answers with its own model (an adapter, a Python callable) is asked, not priced."""
    if not run.dataset.exists():
        raise UserError(f"no dataset at {run.dataset}: run ragaudit generate first")
    queries = list(read_dataset(run))
    if limit is not None:
        queries = queries[:limit]
    if not queries:
        raise UserError(f"{run.dataset} holds no queries")
    dry = DryRun(step="run")
    for sc in systems:
        askings = _askings(run, sc.name, queries, repeats_of(sc, repeat), retry_errors, rerun)
        if not (isinstance(sc, BuiltinSystemConfig) and sc.needs_llm):
            dry.lines.append(
                priced_line(
                    what=f"system {sc.name}",
                    model=None,
                    items=askings,
                    requests=0,
                    cached=0,
                    prompt_tokens=0,
                    completion_tokens=0,
                    tokens_from="asks no LLM of ragaudit's",
                    prices=config.llm.prices,
                )
            )
            continue
        model = llm_model_of(config, sc)
        per_asking = (sc.generator != "none") + (sc.rerank_candidates or 0)
        prompt, completion, how = _answer_tokens(config, run, sc, queries, model)
        requests = askings * per_asking
        dry.lines.append(
            priced_line(
                what=f"system {sc.name}",
                model=model,
                items=askings,
                requests=requests,
                cached=0,
                prompt_tokens=prompt * requests,
                completion_tokens=completion * requests,
                tokens_from=how,
                prices=config.llm.prices,
            )
        )
    dry.notes.append(
        "every request is counted as billed: which answers the cache holds is known only "
        "after retrieval (a rerun's may be free)"
    )
    others = [line.what for line in dry.lines if line.model is None and line.items]
    if others:
        dry.notes.append(
            f"{', '.join(others)}: asked with their own model, which ragaudit does not price"
        )
    return dry


def _askings(
    run: RunDir,
    name: str,
    queries: list[QueryRecord],
    repeats: int,
    retry_errors: bool,
    rerun: bool,
) -> int:
    """How many askings of system ``name`` the run leaves to do (read only), by the
    harness's resume: a query with a response (without an error, with retry_errors) is
    done, and so is a repeat with one."""
    ids = {q.query_id for q in queries}
    done: set[str] = set()
    rep_done: set[tuple[str, int]] = set()
    if not rerun:
        path = run.responses(name)
        if path.exists():
            done = {
                r.query_id
                for r in read_jsonl(path, ResponseRecord)
                if not (retry_errors and r.error)
            }
        rpath = run.repeat_responses(name)
        if rpath.exists() and repeats > 1:
            rep_done = {
                (r.query_id, r.repeat)
                for r in read_jsonl(rpath, RepeatResponse)
                if not (retry_errors and r.error)
            }
    first = len(ids - done)
    more = sum(1 for q in ids for rep in range(1, repeats) if (q, rep) not in rep_done)
    return first + more


def _answer_tokens(
    config: Config,
    run: RunDir,
    sc: BuiltinSystemConfig,
    queries: list[QueryRecord],
    model: str,
) -> tuple[float, float, str]:
    """The (prompt, completion) tokens of one of the system's requests, and how they were
    come by: its earlier answers', its model's cached calls', or the stated estimate."""
    path = run.responses(sc.name)
    if path.exists():
        used = [
            r.usage
            for r in read_jsonl(path, ResponseRecord)
            if r.usage.prompt_tokens + r.usage.completion_tokens > 0
        ]
        if used:
            n = len(used)
            return (
                sum(u.prompt_tokens for u in used) / n,
                sum(u.completion_tokens for u in used) / n,
                f"mean of {n} earlier answers of {sc.name}",
            )
    settings = config.llm.model_copy(update={"model": model})
    settings = type(settings).model_validate(settings.model_dump())
    instructions = answer_instructions(sc.generator)
    with CacheProbe(cache_path_of(config, run, model), settings) as probe:
        mean = probe.mean_tokens(instructions) if instructions is not None else None
        if mean is not None:
            return mean[0], mean[1], f"mean of {mean[2]} answers of {model} in its cache"
    question = sum(estimate_tokens(q.query) for q in queries) / max(1, len(queries))
    passages = 0 if sc.retriever == "none" else sc.depth * config.corpus.chunk_size
    prompt = question + passages * TOKENS_PER_WORD + ANSWER_INSTRUCTION_TOKENS
    reply = min(ANSWER_REPLY_TOKENS, config.llm.max_tokens)
    return (
        prompt,
        reply,
        f"estimated: the question, {sc.depth if passages else 0} passages of "
        f"{config.corpus.chunk_size} words and {ANSWER_INSTRUCTION_TOKENS} tokens of "
        f"instructions in, {reply} out",
    )


def dry_run_generate(
    config: Config, run: RunDir, documents: DocumentOptions | None = None
) -> DryRun:
    """What ``generate`` would ask: nothing for the SQL half; from documents
    (``documents``), the requests per accepted pair of the last generation, or the
    stated figures, times the pairs asked for, and 0 where the last generation ran with
    the same options and its replies are in the cache (a rerun replays them)."""
    model = config.llm.model
    dry = DryRun(step="generate")
    if documents is None:
        dry.lines.append(
            priced_line(
                what="generate (SQL)",
                model=model,
                items=0,
                requests=0,
                cached=0,
                prompt_tokens=0,
                completion_tokens=0,
                tokens_from="no LLM request: the answers are executed SQL",
                prices=config.llm.prices,
            )
        )
        dry.notes.append(
            "the wordings are written and verified by ragaudit templates text and templates "
            "verify, whose LLM requests are theirs"
        )
        return dry
    dry.lines.append(_documents_line(config, run, documents, model))
    dry.notes.append(
        "a generation from documents asks until its pairs are accepted: the requests are "
        "an estimate from requests per accepted pair"
    )
    return dry


def _documents_line(
    config: Config, run: RunDir, options: DocumentOptions, model: str
) -> EstimateLine:
    last: dict[str, Any] = {}
    if run.documents_stats.exists():
        try:
            last = json.loads(run.documents_stats.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            last = {}
    with CacheProbe(cache_path_of(config, run, model), config.llm) as probe:
        mean = probe.mean_tokens()
        stored = mean[2] if mean else 0
    calls = int(last.get("calls") or 0)
    same = last.get("options") == options.model_dump(mode="json")
    if same and calls and stored >= calls:
        return priced_line(
            what="documents",
            model=model,
            items=options.size,
            requests=0,
            cached=calls,
            prompt_tokens=0,
            completion_tokens=0,
            tokens_from="the last generation with these options: its replies are in the cache",
            prices=config.llm.prices,
        )
    per_pair = last.get("calls_per_pair")
    tokens_pair = last.get("tokens_per_pair")
    if per_pair and tokens_pair:
        how = "measured by the last generation (documents.stats.json)"
    else:
        per_pair, tokens_pair = PAIR_COST[options.strategy]
        how = f"estimated: {options.strategy}'s requests and tokens per pair in docs/documents.md"
    share = mean[0] / max(1e-9, mean[0] + mean[1]) if mean else PROMPT_SHARE
    tokens = float(tokens_pair) * options.size
    return priced_line(
        what="documents",
        model=model,
        items=options.size,
        requests=math.ceil(float(per_pair) * options.size),
        cached=0,
        prompt_tokens=tokens * share,
        completion_tokens=tokens * (1 - share),
        tokens_from=how,
        prices=config.llm.prices,
    )


__all__ = ["dry_run_generate", "dry_run_judge", "dry_run_run"]
