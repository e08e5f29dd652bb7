"""The ``run`` step: every configured system asked every query of the dataset, each into
responses/<system>.jsonl (resumable, see :mod:`ragaudit.run.harness`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ragaudit.config import Config, SystemConfig
from ragaudit.errors import ConfigError, UserError
from ragaudit.llm.client import LLMClient
from ragaudit.records.io import atomic_write_json, read_jsonl
from ragaudit.records.models import QueryRecord
from ragaudit.run.harness import SystemRunStats, run_system
from ragaudit.rundir import RunDir
from ragaudit.systems.corpus import Chunk, chunk, load_corpus
from ragaudit.systems.factory import build_system, needs_corpus
from ragaudit.systems.retrievers import Retriever

# (system name) -> (on_start(total, done), advance(n)) for a progress display
ProgressFactory = Callable[[str], tuple[Callable[[int, int], None], Callable[[int], None]]]


def selected_systems(config: Config, names: list[str] | None) -> list[SystemConfig]:
    """The systems to run: all of ragaudit.yaml's, or those named (unknown names are errors)."""
    if not config.systems:
        raise ConfigError(
            "no systems to run: declare them under 'systems:' in ragaudit.yaml (docs/systems.md)"
        )
    if not names:
        return list(config.systems)
    known = {s.name: s for s in config.systems}
    missing = [n for n in names if n not in known]
    if missing:
        raise ConfigError(f"no system named {missing[0]!r} (known: {', '.join(known)})")
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
    """The model a built-in system answers with."""
    return sc.llm or config.llm.model


async def run_systems(
    config: Config,
    run: RunDir,
    systems: list[SystemConfig],
    llms: dict[str, LLMClient],
    *,
    limit: int | None = None,
    retry_errors: bool = False,
    progress: ProgressFactory | None = None,
) -> dict[str, SystemRunStats]:
    """Ask every system in ``systems`` every query (the first ``limit``), one system after
    the other, each with the harness's concurrency. ``llms`` maps model names to clients."""
    if not run.dataset.exists():
        raise UserError(f"no dataset at {run.dataset}: run ragaudit generate first")
    queries = list(read_jsonl(run.dataset, QueryRecord))
    if limit is not None:
        queries = queries[:limit]
    if not queries:
        raise UserError(f"{run.dataset} holds no queries")
    chunks = load_chunks(config) if any(needs_corpus(s) for s in systems) else None
    index_dir = config.harness.index_dir or run.root / "cache" / "index"
    shared: dict[tuple[str, float], Retriever] = {}
    results: dict[str, SystemRunStats] = {}
    for sc in systems:
        system = build_system(
            sc,
            chunks=chunks,
            llm=llms.get(llm_model_of(config, sc)),
            index_dir=index_dir,
            concurrency=config.harness.concurrency,
            retrievers=shared,
        )
        hooks = progress(sc.name) if progress else (None, None)
        try:
            results[sc.name] = await run_system(
                system,
                queries,
                run.responses(sc.name),
                concurrency=config.harness.concurrency,
                timeout_s=sc.timeout_s or config.harness.timeout_s,
                retry_errors=retry_errors,
                on_start=hooks[0],
                advance=hooks[1],
            )
        finally:
            await system.aclose()
    atomic_write_json(run.root / "run.stats.json", _stats_dict(results))
    return results


def _stats_dict(results: dict[str, SystemRunStats]) -> dict[str, Any]:
    return {
        name: {
            "asked": s.asked,
            "already_done": s.already_done,
            "errors": s.errors,
            "error_examples": s.error_examples,
            "seconds": round(s.seconds, 3),
            "queries_per_s": round(s.rate, 2),
            "prompt_tokens": s.prompt_tokens,
            "completion_tokens": s.completion_tokens,
        }
        for name, s in results.items()
    }
