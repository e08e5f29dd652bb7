"""The ``run`` step: every configured system asked every query of the dataset, each into
responses/<system>.jsonl (resumable, see :mod:`ragaudit.harness.ask`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from ragaudit.config import Config, SystemConfig
from ragaudit.errors import ConfigError, UserError
from ragaudit.harness.ask import SystemRunStats, run_system
from ragaudit.llm.client import LLMClient
from ragaudit.llm.usage import usage_part
from ragaudit.progress import SILENT, Progress
from ragaudit.records.io import atomic_write_json, read_jsonl
from ragaudit.records.models import QueryRecord, ResponseRecord
from ragaudit.rundir import RunDir
from ragaudit.steps.session import Session
from ragaudit.store.answers import refresh_answer_table
from ragaudit.store.records import read_dataset
from ragaudit.systems.adapters import (
    HTTPSystemConfig,
    LangChainSystemConfig,
    LlamaIndexSystemConfig,
)
from ragaudit.systems.base import Retriever, System, SystemOptions
from ragaudit.systems.builtin import BuiltinSystemConfig
from ragaudit.systems.corpus import Chunk, chunk, load_corpus
from ragaudit.systems.factory import build_system, needs_corpus, needs_llm


class SystemRunEntry(BaseModel):
    """One system's entry of run.stats.json: what this run asked it and how it went
    (:class:`~ragaudit.harness.ask.SystemRunStats`, seconds and rate rounded), and what
    its retrieved ids say is wrong."""

    asked: int
    already_done: int
    errors: int
    error_examples: list[str]
    seconds: float
    queries_per_s: float
    prompt_tokens: int
    completion_tokens: int
    warnings: list[str]
    repeats: int = 1  # absent from files written before run --repeat

    @classmethod
    def of(cls, s: SystemRunStats) -> SystemRunEntry:
        """The entry of one system's run."""
        return cls(
            asked=s.asked,
            already_done=s.already_done,
            errors=s.errors,
            error_examples=s.error_examples,
            seconds=round(s.seconds, 3),
            queries_per_s=round(s.rate, 2),
            prompt_tokens=s.prompt_tokens,
            completion_tokens=s.completion_tokens,
            warnings=s.warnings,
            repeats=s.repeats,
        )


def selected_systems(config: Config, names: list[str] | None) -> list[SystemConfig]:
    """The systems to run: all of ragaudit.yaml's, or those named (unknown names are errors)."""
    known = {s.name: s for s in config.systems}
    missing = [n for n in names or [] if n not in known]
    if missing:
        declared = f"known: {', '.join(known)}" if known else "ragaudit.yaml declares none"
        raise ConfigError(f"no system named {missing[0]!r} ({declared})")
    if not config.systems:
        raise ConfigError(
            "no systems to run: declare them under 'systems:' in ragaudit.yaml (docs/systems.md)"
        )
    if not names:
        return list(config.systems)
    return [known[n] for n in names]


def load_chunks(config: Config) -> list[Chunk]:
    """The configured corpus, chunked."""
    if config.corpus.path is None:
        raise ConfigError("corpus.path is not set: the built-in systems retrieve from it")
    return chunk(
        load_corpus(config.corpus.path),
        config.corpus.chunking,
        size=config.corpus.chunk_size,
        overlap=config.corpus.chunk_overlap,
    )


def llm_model_of(config: Config, sc: SystemConfig) -> str:
    """The model a built-in system answers with (the ``llm`` section's, unless it names
    its own); an adapter answers with its own and is given none."""
    own = sc.llm if isinstance(sc, BuiltinSystemConfig) else None
    return own or config.llm.model


def run_systems(
    session: Session,
    systems: Sequence[SystemConfig | System],
    *,
    limit: int | None = None,
    retry_errors: bool = False,
    rerun: bool = False,
    repeat: int | None = None,
    progress: Progress = SILENT,
) -> dict[str, SystemRunStats]:
    """Ask every system in ``systems`` every query (the first ``limit``), one system after
    the other, each with the harness's concurrency; the built-in ones answer with the
    session's clients (one per model they name). A system may be a configuration entry or
    an object already built (``ra.system(fn)``: a Python callable). ``progress`` shows a
    task per system, named by it (answers of an earlier run count as done). ``rerun``:
    each system's earlier responses (and repeats) are removed first and every query asked
    again (a system changed under the same name); its judgements of the old responses are
    then stale, and ``judge`` judges the new ones. ``repeat`` N asks every query N times
    (each system's own ``repeat:`` otherwise, 1 for a system object): the first asking
    into responses/, the others into repeats/responses/ (:func:`repeats_of`)."""
    if repeat is not None and not 1 <= repeat <= 1000:
        raise UserError(f"repeat must be between 1 and 1000, not {repeat}")
    names = [s.name for s in systems]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"two systems are named {twice[0]!r}: each writes responses/<name>.jsonl")
    models = [
        llm_model_of(session.config, sc)
        for sc in systems
        if isinstance(sc, SystemOptions) and needs_llm(sc)
    ]
    with session.clients("run", models) as llms:
        return session.run(
            _run_systems(
                session.config,
                session.run_dir,
                systems,
                llms,
                limit=limit,
                retry_errors=retry_errors,
                rerun=rerun,
                repeat=repeat,
                progress=progress,
            )
        )


def repeats_of(system: SystemConfig | System, repeat: int | None) -> int:
    """How many times ``system`` asks each query: ``repeat`` (``run --repeat N``) when
    given, else the system's own ``repeat:`` (1 for a system object)."""
    if repeat is not None:
        return repeat
    return system.repeat if isinstance(system, SystemOptions) else 1


async def _run_systems(
    config: Config,
    run: RunDir,
    systems: Sequence[SystemConfig | System],
    llms: dict[str, LLMClient],
    *,
    limit: int | None,
    retry_errors: bool,
    rerun: bool,
    repeat: int | None,
    progress: Progress,
) -> dict[str, SystemRunStats]:
    if not run.dataset.exists():
        raise UserError(f"no dataset at {run.dataset}: run ragaudit generate first")
    dataset = read_dataset(run)  # held to the end: the answer table reads the same
    queries = list(dataset)
    if limit is not None:
        queries = queries[:limit]
    if not queries:
        raise UserError(f"{run.dataset} holds no queries")
    configs: list[SystemConfig] = [s for s in systems if isinstance(s, SystemOptions)]
    chunks = load_chunks(config) if any(needs_corpus(s) for s in configs) else None
    index_dir = config.harness.index_dir or run.index_dir
    shared: dict[tuple[str, float], Retriever] = {}
    results: dict[str, SystemRunStats] = {}
    known: tuple[set[str], str] | None = None
    for sc in systems:
        system: System = (
            build_system(
                sc,  # a configuration entry
                chunks=chunks,
                llm=llms.get(llm_model_of(config, sc)),
                index_dir=index_dir,
                concurrency=config.harness.concurrency,
                retrievers=shared,
            )
            if isinstance(sc, SystemOptions)
            else sc
        )
        task = progress.task(sc.name)
        if rerun:
            run.responses(sc.name).unlink(missing_ok=True)
            run.repeat_responses(sc.name).unlink(missing_ok=True)
            # The repeats' verdicts judged only the answers removed here; the first
            # askings' stay, refused until judge judges the new answers (it keeps a
            # verdict whose answer came back the same).
            run.repeat_judgements(sc.name).unlink(missing_ok=True)
        try:
            # Its LLM calls counted as its own (what answering it cost), in usage.json.
            with usage_part(sc.name):
                results[sc.name] = await run_system(
                    system,
                    queries,
                    run.responses(sc.name),
                    concurrency=config.harness.concurrency,
                    timeout_s=getattr(sc, "timeout_s", None) or config.harness.timeout_s,
                    retry_errors=retry_errors,
                    store_texts=config.harness.store_texts,
                    repeats=repeats_of(sc, repeat),
                    repeats_out=run.repeat_responses(sc.name),
                    on_start=task.start,
                    advance=task.advance,
                )
        finally:
            await system.aclose()
        done = results[sc.name]
        if not done.asked and done.already_done:
            # A system changed under the same name would otherwise keep its old answers
            # without a word (the usual loop of a notebook).
            done.warnings.append(
                f"{sc.name}: every query already had a response from an earlier run: nothing "
                "was asked (--rerun, or run(..., rerun=True), asks again)"
            )
        # Checked over the whole file, so that a resumed run says the same.
        retrieved, depth = retrieved_ids(run.responses(sc.name))
        if retrieved and isinstance(sc, SystemOptions):
            known = known if known is not None else _known_ids(config, queries)
            results[sc.name].warnings += retrieval_warnings(
                sc,  # a configuration entry
                retrieved,
                depth,
                *known,
            )
    atomic_write_json(
        run.run_stats, {name: SystemRunEntry.of(s).model_dump() for name, s in results.items()}
    )
    refresh_answer_table(run)
    return results


def _known_ids(config: Config, queries: list[QueryRecord]) -> tuple[set[str], str]:
    """The ids a retrieved document should have, and what they are: the corpus's
    documents where ragaudit knows the corpus, else every query's gold ids."""
    if config.corpus.path is not None:
        return {d.id for d in load_corpus(config.corpus.path)}, "corpus"
    return {doc for q in queries for doc in q.gold_ids or ()}, "gold"


def retrieved_ids(path: Path) -> tuple[dict[str, int], int]:
    """Every id a system's responses retrieved, with how often, and the longest list."""
    counts: dict[str, int] = {}
    depth = 0
    if not path.exists():
        return counts, depth
    for response in read_jsonl(path, ResponseRecord):
        depth = max(depth, len(response.retrieved))
        for item in response.retrieved:
            counts[item.id] = counts.get(item.id, 0) + 1
    return counts, depth


def retrieval_warnings(
    sc: SystemConfig, retrieved: dict[str, int], depth: int, known: set[str], kind: str
) -> list[str]:
    """What the ids a system retrieved (with how often, and the longest list) say is
    wrong, with counts: ids that match no document of the corpus (a LlamaIndex node
    without ``metadata["id"]`` is named by a random UUID), none matching any gold id, or
    more documents than ``k``."""
    out = []
    total = sum(retrieved.values())
    if kind == "corpus":
        stray = {doc: n for doc, n in retrieved.items() if doc not in known}
        if stray:
            example = next(iter(stray))
            out.append(
                f"{sc.name}: {sum(stray.values())} of {total} retrieved ids "
                f"({len(stray)} distinct, e.g. {example!r}) match no document id of the "
                f"corpus, so they never count as the gold documents; {_id_hint(sc)}"
            )
    elif known and not any(doc in known for doc in retrieved):
        example = next(iter(retrieved))
        out.append(
            f"{sc.name}: none of the {len(retrieved)} distinct retrieved ids (e.g. "
            f"{example!r}) is the gold id of any query; {_id_hint(sc)}"
        )
    if not isinstance(sc, BuiltinSystemConfig) and sc.k is not None and depth > sc.k:
        out.append(f"{sc.name}: k is {sc.k} but the system returned up to {depth} documents")
    return out


def _id_hint(sc: SystemConfig) -> str:
    """How to make a system's retrieved ids name documents."""
    if isinstance(sc, LangChainSystemConfig | LlamaIndexSystemConfig):
        return (
            f"give each document its id in metadata[{sc.id_field!r}] (systems.{sc.name}."
            "id_field names another key)"
        )
    if isinstance(sc, HTTPSystemConfig):
        return f"check systems.{sc.name}.ids_path"
    return "return the ids the corpus gives its documents"
