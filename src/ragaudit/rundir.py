"""The run directory: where every step reads and writes its plain files.

Layout (DESIGN.md)::

    runs/<name>/
      ragaudit.yaml            resolved configuration, secrets masked (of the last step)
      provenance.json          per step: ragaudit version, time, configuration
      manifest.json            per derived file: the digests of its inputs, its options
      templates/sql.yaml       templates/text.yaml
      dataset.jsonl            dataset.stats.json
      responses/<system>.jsonl judgements/<system>.jsonl   scores/<system>.jsonl
      repeats/responses/<system>.jsonl  repeats/judgements/<system>.jsonl  (run --repeat N)
      answers.parquet          the joined answer table (built from the JSON Lines above)
      summary.json             summary.md    drilldown.jsonl    report.html
      run.stats.json           judge.stats.json   gold_facts.jsonl (generate.gold_rows)
      refresh.jsonl            refresh.stats.json retired/ (generate --refresh)
      labels.jsonl             labels/pairs.jsonl labels/contexts.jsonl    scan.json
      compare.json             compare.md   (ragaudit compare)
      usage.json               LLM usage per step
      cache/llm.sqlite         every LLM call, keyed by its full request
      cache/index/             retrieval indexes, by corpus fingerprint
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

import yaml

from ragaudit.config import Config
from ragaudit.errors import UserError
from ragaudit.records.io import atomic_write_json, atomic_write_text

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no advisory file locks
    # Windows: no advisory locks, and mypy checks for Linux, where fcntl is a module.
    fcntl = None  # type: ignore[assignment]

# Run directories this process holds: resolved path -> the open, locked lock file.
_HELD: dict[Path, IO[str]] = {}
# Those held by a step of the Python API: the thread and the step, so that two steps of
# one process (asyncio.gather of two async twins) cannot write one run at the same time.
_OWNERS: dict[Path, tuple[int, str]] = {}
_THREADS_LOCK = threading.Lock()

_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")


def safe_filename(name: str) -> str:
    """Turn a system name into a file name that cannot escape its folder."""
    cleaned = _SAFE_NAME.sub("_", name).strip("._")
    return cleaned or "_"


@dataclass(frozen=True)
class RunDir:
    """Paths of one run; creating it makes the folders, never deletes anything."""

    root: Path

    @classmethod
    def from_config(cls, config: Config) -> RunDir:
        """The run directory named by ``run.root`` / ``run.name``."""
        return cls(config.run.root / config.run.name)

    @property
    def config(self) -> Path:
        return self.root / "ragaudit.yaml"

    @property
    def templates_sql(self) -> Path:
        return self.root / "templates" / "sql.yaml"

    @property
    def templates_text(self) -> Path:
        return self.root / "templates" / "text.yaml"

    @property
    def templates_coverage(self) -> Path:
        """What templates/sql.yaml reaches of the schema, per table and column
        (``templates sql`` writes it; the report shows it)."""
        return self.root / "templates" / "coverage.json"

    @property
    def dataset(self) -> Path:
        return self.root / "dataset.jsonl"

    @property
    def dataset_stats(self) -> Path:
        """Counts of the generated dataset (the paper's Table 2) and per template."""
        return self.root / "dataset.stats.json"

    def responses(self, system: str) -> Path:
        """Responses of one system under test."""
        return self.root / "responses" / f"{safe_filename(system)}.jsonl"

    def judgements(self, system: str) -> Path:
        """Judgements of one system's responses."""
        return self.root / "judgements" / f"{safe_filename(system)}.jsonl"

    def scores(self, system: str) -> Path:
        """Reference-free metrics of one system's responses (judge --reference-free)."""
        return self.root / "scores" / f"{safe_filename(system)}.jsonl"

    def repeat_responses(self, system: str) -> Path:
        """The repeats of one system's answers (``run --repeat N``): its responses to every
        query asked again, repeats 1 to N - 1 (the first asking is in :meth:`responses`)."""
        return self.repeats_dir / "responses" / f"{safe_filename(system)}.jsonl"

    def repeat_judgements(self, system: str) -> Path:
        """The judgements of one system's repeats (:meth:`repeat_responses`)."""
        return self.repeats_dir / "judgements" / f"{safe_filename(system)}.jsonl"

    @property
    def repeats_dir(self) -> Path:
        """Where the repeats of every system are (``repeats/responses/`` and
        ``repeats/judgements/``): beside ``responses/`` and ``judgements/``, which keep one
        record per query, so that their readers read them as they did before repeats."""
        return self.root / "repeats"

    @property
    def judgements_dir(self) -> Path:
        """Where each system's judgements are: one JSONL file per system."""
        return self.root / "judgements"

    @property
    def answers_table(self) -> Path:
        """The joined answer table (query x response x judgement x reference-free scores,
        and where each answer went wrong) as Parquet: built from the JSON Lines, which
        stay the source of truth, and rebuilt whenever they changed
        (:mod:`ragaudit.store.answers`)."""
        return self.root / "answers.parquet"

    @property
    def scores_dir(self) -> Path:
        """Where the reference-free metrics of every system are."""
        return self.root / "scores"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    @property
    def summary_md(self) -> Path:
        """The analysis as markdown tables, for reading and for pull requests."""
        return self.root / "summary.md"

    @property
    def responses_dir(self) -> Path:
        """Where each system's responses are: one JSONL file per system."""
        return self.root / "responses"

    @property
    def run_stats(self) -> Path:
        """Per system: queries asked, errors, rate and tokens of the last ``run``."""
        return self.root / "run.stats.json"

    @property
    def judge_stats(self) -> Path:
        """Per system: how the last ``judge`` decided, its retrieval rule and warnings."""
        return self.root / "judge.stats.json"

    @property
    def refresh_log(self) -> Path:
        """What the last ``generate --refresh`` moved: every group whose answer changed,
        that vanished or that is new, with its old and new references, and the documents
        stating facts no longer true (``refresh.jsonl``)."""
        return self.root / "refresh.jsonl"

    @property
    def refresh_stats(self) -> Path:
        """The last refresh's counts per class, the records it retired, its notes."""
        return self.root / "refresh.stats.json"

    @property
    def retired_dir(self) -> Path:
        """Where a refresh moves the responses, judgements and scores of questions that
        left the dataset (``retired/<kind>/<system>.jsonl``): kept, never read again."""
        return self.root / "retired"

    @property
    def gold_facts(self) -> Path:
        """The facts ``generate.gold_rows`` derived: which document states which cell."""
        return self.root / "gold_facts.jsonl"

    @property
    def index_dir(self) -> Path:
        """Where retrieval indexes persist unless ``harness.index_dir`` says otherwise."""
        return self.root / "cache" / "index"

    @property
    def labels(self) -> Path:
        """Every rater's label of every (context, question) pair (``ragaudit label``)."""
        return self.root / "labels.jsonl"

    @property
    def label_pairs(self) -> Path:
        """The pairs the labels are of: question, gold (context) ids, the set's own flags."""
        return self.root / "labels" / "pairs.jsonl"

    @property
    def label_contexts(self) -> Path:
        """The contexts of pairs imported from a file, ``{id, text}``: their corpus."""
        return self.root / "labels" / "contexts.jsonl"

    @property
    def imported_contexts(self) -> Path:
        """The contexts of an imported question set, ``{id, text}`` (generate --import):
        a corpus whose ids are the imported questions' gold ids."""
        return self.root / "imported" / "contexts.jsonl"

    @property
    def import_incomplete(self) -> Path:
        """Present while an import replaces the dataset and its contexts (two files): a
        process killed between the two leaves it, and every step but ``generate`` refuses
        the run until the import is run again."""
        return self.root / "imported" / "INCOMPLETE"

    @property
    def candidates(self) -> Path:
        """Every pair generated from the corpus, accepted or dropped with its reason."""
        return self.root / "candidates.jsonl"

    @property
    def candidates_partial(self) -> Path:
        """The candidates of a generation from documents under way, appended as each is
        decided (without their wordings); replaced by :attr:`candidates` when it ends."""
        return self.root / "candidates.jsonl.partial"

    @property
    def documents_stats(self) -> Path:
        """The counts and costs of the last generation from documents."""
        return self.root / "documents.stats.json"

    @property
    def scan(self) -> Path:
        """The text-weight scan (``ragaudit scan``)."""
        return self.root / "scan.json"

    @property
    def compare(self) -> Path:
        """The rankings of the systems per test set and their agreement (``ragaudit
        compare``), one study per metric and split."""
        return self.root / "compare.json"

    @property
    def compare_md(self) -> Path:
        """The same as markdown tables."""
        return self.root / "compare.md"

    @property
    def drilldown(self) -> Path:
        """One line per analyzed query with its group's tag."""
        return self.root / "drilldown.jsonl"

    @property
    def report(self) -> Path:
        return self.root / "report.html"

    @property
    def usage(self) -> Path:
        return self.root / "usage.json"

    @property
    def llm_cache(self) -> Path:
        return self.root / "cache" / "llm.sqlite"

    def create(self) -> RunDir:
        """Make the run's folders (idempotent)."""
        for sub in ("templates", "responses", "judgements", "cache"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        return self

    def lock(self, step: str) -> None:
        """Hold the run directory for this process until :func:`release_locks`: a second
        step writing the same directory at the same time (two ``ragaudit run``) would
        interleave its records with this one's. The second gets a one-line error naming
        the holder. Re-entrant within a process; released by the OS if the process dies."""
        path = self.root / ".lock"
        key = path.resolve()
        if key in _HELD or fcntl is None:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        handle = path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another ragaudit process"
            handle.close()
            raise UserError(
                f"{self.root} is in use by {holder}: wait for it to finish, or give this "
                "run another run.name"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"ragaudit {step} (pid {os.getpid()})\n")
        handle.flush()
        _HELD[key] = handle

    def writer_elsewhere(self) -> str | None:
        """Who holds the run directory in another process (``ragaudit run (pid 123)``), or
        None: a reader that would write a file derived from the run's records (the answer
        table) leaves it alone while another process is still writing them."""
        path = self.root / ".lock"
        if fcntl is None or path.resolve() in _HELD or not path.is_file():
            return None
        with path.open("r", encoding="utf-8") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return handle.read().strip() or "another ragaudit process"
            fcntl.flock(handle, fcntl.LOCK_UN)
        return None

    @contextlib.contextmanager
    def holding(self, step: str) -> Iterator[RunDir]:
        """:meth:`lock` for the length of a ``with`` block: a long-lived process (a
        notebook, a test session) holds the run only while a step writes it, so that the
        command line can use it in between. A hold already taken is kept."""
        key = (self.root / ".lock").resolve()
        with _THREADS_LOCK:
            owner = _OWNERS.get(key)
            if owner is not None and owner[0] != threading.get_ident():
                raise UserError(
                    f"{self.root} is in use by ragaudit {owner[1]} in this process (another "
                    "thread): wait for it to finish, or give this run another run.name"
                )
            held_before = key in _HELD
            if step not in ("generate", "doctor") and self.import_incomplete.exists():
                raise UserError(
                    f"{self.root}: an import into this run was interrupted "
                    f"({self.import_incomplete} is there): its questions and contexts may "
                    "not match; run ragaudit generate --import again"
                )
            self.lock(step)
            if not held_before:
                _OWNERS[key] = (threading.get_ident(), step)
        try:
            yield self
        finally:
            if not held_before:
                with _THREADS_LOCK:
                    _OWNERS.pop(key, None)
                    if key in _HELD:
                        _HELD.pop(key).close()

    @property
    def manifest(self) -> Path:
        """What every derived file of the run was made from: its inputs' digests and the
        options that shaped it (:mod:`ragaudit.store.manifest`)."""
        return self.root / "manifest.json"

    @property
    def provenance(self) -> Path:
        """Per step: the ragaudit version, when, and the configuration it ran with."""
        return self.root / "provenance.json"

    def record_step(
        self,
        config: Config,
        step: str,
        options: dict[str, Any] | None = None,
        *,
        status: Literal["running", "done"] = "running",
    ) -> Path:
        """Say how this run directory was made: ``ragaudit.yaml`` becomes the configuration
        ``step`` runs with (secrets masked), and ``provenance.json`` gets one more entry
        (steps are appended, never replaced): the step, the ragaudit version, the time,
        that configuration and the command's ``options`` (flags that change the figures),
        so that every figure can be traced to the settings that made it. ``status``:
        ``running`` for a step about to run (:meth:`end_step` says how it ended), ``done``
        for one recorded once its work is done."""
        from ragaudit.version import __version__

        masked = config.masked_dict()
        text = yaml.safe_dump(masked, sort_keys=False, allow_unicode=True)
        header = (
            f"# resolved configuration (secrets masked), written by ragaudit {__version__} "
            f"for step '{step}'\n"
        )
        atomic_write_text(self.config, header + text)
        steps: list[Any] = []
        if self.provenance.exists():
            with contextlib.suppress(ValueError, OSError, KeyError, TypeError):
                steps = list(json.loads(self.provenance.read_text(encoding="utf-8"))["steps"])
        steps.append(
            {
                "step": step,
                "ragaudit_version": __version__,
                "at": datetime.now(UTC).isoformat(timespec="seconds"),
                "options": {k: v for k, v in (options or {}).items() if v is not None},
                "config": masked,
                "status": status,
            }
        )
        atomic_write_json(self.provenance, {"steps": steps})
        return self.config

    def end_step(self, step: str, status: Literal["done", "failed"]) -> None:
        """Say how ``step``'s last entry in ``provenance.json`` (still ``running``) ended:
        a step that failed wrote nothing its options can be read from, so whoever
        recomputes a figure with the options of "the last analyze" reads those of the
        last one that was ``done``. A provenance that cannot be read is left as it is."""
        try:
            data = json.loads(self.provenance.read_text(encoding="utf-8"))
            steps = list(data["steps"])
        except (ValueError, OSError, KeyError, TypeError):
            return
        for item in reversed(steps):
            if isinstance(item, dict) and item.get("step") == step:
                if item.get("status") == "running":
                    item["status"] = status
                    atomic_write_json(self.provenance, {**data, "steps": steps})
                return


def release_locks() -> None:
    """Release every run directory this process holds (at the end of a command)."""
    for handle in _HELD.values():
        handle.close()  # closing the file releases its lock
    _HELD.clear()
