"""The run manifest (``manifest.json``): for every file of a run that is derived from other
files, what it was derived from, so that no reader takes an older figure for a current one.

A derived file's entry holds the digest of the file as it was written, the digests of its
inputs at that moment (every file its kind reads: :data:`KINDS`), and the options that
shaped it (the retrieval rule, the seed, the thresholds...). A reader compares the entry
with the files as they are now (:func:`check`): the derived file is *current* when it is
the file that was written and every input is as it was, no input added or gone; otherwise
it is *stale*, with the first input that moved named. What a reader then does is the
kind's rule (:class:`Kind`, docs/records.md "The run manifest"): the summary is computed
again with the options recorded for it, the answer table rebuilt, the report made again.

Judgements, repeats' judgements and reference-free scores are refused record by record
instead (:func:`ragaudit.store.records.check_fresh`): each keeps the digest of the
response and the reference it judged, since a file-level digest cannot tell a resumed
run's appended answers (the earlier verdicts still hold) from a rerun's new ones.

A digest is the SHA-256 of the file's bytes, so a run folder copied elsewhere (new inodes,
new times) stays current. Hashing a large file costs about a second a gigabyte, so the
manifest keeps each file's last digest beside its stamp (inode, size, modification time):
a file whose stamp has not moved is not read again.

A run folder written before the manifest existed is fingerprinted the first time it is
opened: a derived file no older than every input it has is taken as made from them (with
the options ``provenance.json`` recorded for its step), any other is stale; this is said
once (a :class:`RunNotice`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragaudit.errors import RunNotice
from ragaudit.records.io import atomic_write_json
from ragaudit.rundir import RunDir

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no advisory file locks
    fcntl = None  # type: ignore[assignment]

# Raised when the manifest's shape changes; a manifest of another format is read as none
# (every derived file stale until it is made again), never misread.
FORMAT = 1

# What an input that does not exist is recorded as: its appearing later moves it.
ABSENT = "absent"


def notify(message: str) -> None:
    """Say ``message`` as a :class:`RunNotice` (once per message and place, by Python's
    warning rules)."""
    warnings.warn(message, RunNotice, stacklevel=3)


class Entry(BaseModel):
    """How one derived file was made."""

    model_config = ConfigDict(extra="ignore")

    kind: str = Field(description="the file's kind (:data:`KINDS`)")
    step: str = Field(description="the step that wrote it (analyze, report, ...)")
    digest: str = Field(description="the file's digest as that step wrote it")
    outputs: dict[str, str] = Field(
        default_factory=dict,
        description="every file of the kind (summary.json, summary.md, drilldown.jsonl) by "
        "path in the run, with its digest as written ('absent' where it was not)",
    )
    inputs: dict[str, str] = Field(
        description="every input of the kind, by path in the run (or absolute, outside it), "
        "with its digest then ('absent' when it did not exist)"
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="the options that shaped the file"
    )
    at: str = Field(description="when it was written (UTC, ISO 8601)")
    ragaudit: str = Field(description="the ragaudit version that wrote it")
    fingerprinted: bool = Field(
        False,
        description="taken as current when a run written before the manifest was first "
        "opened (no step recorded it)",
    )


class Seen(BaseModel):
    """A file's last known digest, and the stamp it had then."""

    stamp: tuple[int, int, int] = Field(description="inode, size, modification time (ns)")
    digest: str


class ManifestFile(BaseModel):
    """manifest.json."""

    model_config = ConfigDict(extra="ignore")

    format: int = FORMAT
    files: dict[str, Entry] = Field(default_factory=dict)
    seen: dict[str, Seen] = Field(default_factory=dict)


@dataclass(frozen=True)
class Kind:
    """A kind of derived file: its files (the first is the one whose digest is kept), its
    inputs as they are now, the step that makes it, and the rule a reader follows when it
    is stale: ``recompute`` (made again from its inputs with the options recorded for it),
    ``rebuild`` (made again from its inputs; no options) or ``refuse`` (a one-line
    :class:`~ragaudit.errors.StaleInputError` naming the step to run)."""

    name: str
    outputs: Callable[[RunDir], list[Path]]
    inputs: Callable[[RunDir], list[Path]]
    step: str
    rule: Literal["recompute", "rebuild", "refuse"]
    doc: str
    # Inputs outside the run that the recorded options name, as they are now (the
    # --neutral files of an analysis, a folder's files read again so that one added shows).
    outside: Callable[[Mapping[str, Any]], list[Path]] = lambda options: []


def expand_folders(paths: Sequence[str | Path]) -> list[Path]:
    """Each path, a folder standing for its ``*.jsonl`` files (sorted): what a folder given
    as ``--neutral`` means, then and whenever the summary is checked, so that a file added
    to the folder is an input added."""
    out: list[Path] = []
    for given in paths:
        path = Path(given)
        out.extend(sorted(path.glob("*.jsonl")) if path.is_dir() else [path])
    return out


def _neutral_inputs(options: Mapping[str, Any]) -> list[Path]:
    given = options.get("neutral")
    if not isinstance(given, list) or not all(isinstance(p, str) for p in given):
        return []  # options the summary's reader refuses before it recomputes anything
    return [p.absolute() for p in expand_folders(given)]


def _folder(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


def record_inputs(run: RunDir) -> list[Path]:
    """The dataset and every per-query record file of the run (responses, judgements,
    reference-free scores, and the repeats' responses and judgements): what the answer
    table and every figure of answers are made from."""
    return [
        run.dataset,
        *_folder(run.responses_dir),
        *_folder(run.judgements_dir),
        *_folder(run.scores_dir),
        *_folder(run.repeats_dir / "responses"),
        *_folder(run.repeats_dir / "judgements"),
    ]


def summary_inputs(run: RunDir) -> list[Path]:
    """What ``analyze`` reads besides its options: the records, the judge's rule
    (judge.stats.json), the generation from documents (candidates.jsonl and its
    thresholds), the labels and the pairs they are of, the scan, and what the cost
    section reads (the LLM usage, the run's and the wordings' counts)."""
    return [
        *record_inputs(run),
        run.judge_stats,
        run.candidates,
        run.documents_stats,
        run.labels,
        run.label_pairs,
        run.label_contexts,
        run.scan,
        run.usage,
        run.run_stats,
        run.templates_text,
    ]


def corpus_folder(run: RunDir) -> Path | None:
    """The folder of the corpus the run's configuration (its copy in the run) names, or
    None where it names none: where a generated world keeps its world.json."""
    import yaml

    try:
        config = yaml.safe_load(run.config.read_text(encoding="utf-8")) or {}
        return Path(str((config.get("corpus") or {})["path"])).parent
    except (OSError, KeyError, TypeError, ValueError, yaml.YAMLError):
        return None


def report_inputs(run: RunDir) -> list[Path]:
    """What ``report`` reads: the summary, its drill-down, and the run's other files the
    page shows (the dataset's counts, usage, the refresh, the rankings)."""
    return [
        run.summary,
        run.drilldown,
        run.dataset,
        run.dataset_stats,
        run.templates_sql,
        run.templates_coverage,
        run.usage,
        run.refresh_log,
        run.refresh_stats,
        run.compare,
        *_folder(run.repeats_dir / "judgements"),
        *([folder / "world.json"] if (folder := corpus_folder(run)) is not None else []),
    ]


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind(
            "summary",
            lambda run: [run.summary, run.summary_md, run.drilldown],
            summary_inputs,
            "analyze",
            "recompute",
            "summary.json, summary.md and drilldown.jsonl: analyzed again with the options "
            "recorded for them (analysis asks no model), or refused where an input they were "
            "read from outside the run is gone",
            _neutral_inputs,
        ),
        Kind(
            "answers",
            lambda run: [run.answers_table],
            record_inputs,
            "run",
            "rebuild",
            "answers.parquet: built again from the JSON Lines, never trusted",
        ),
        Kind(
            "compare",
            lambda run: [run.compare, run.compare_md],
            record_inputs,
            "compare",
            "refuse",
            "compare.json and compare.md: a study of records that have changed since is left "
            "out of the report, said once, until ragaudit compare is run again",
        ),
        Kind(
            "dataset_stats",
            lambda run: [run.dataset_stats],
            lambda run: [run.dataset],
            "generate",
            "recompute",
            "dataset.stats.json: the counts that describe the dataset (groups, questions "
            "per style, gold groups, per table) recounted from dataset.jsonl as it is now, "
            "what only generation saw kept and said to be",
        ),
        Kind(
            "report",
            lambda run: [run.report],
            report_inputs,
            "report",
            "recompute",
            "report.html: made again (after the summary, if that is stale too) wherever "
            "ragaudit passes it on (export mlflow)",
        ),
    )
}


def _relative(run: RunDir, path: Path) -> str:
    """``path`` as the manifest names it: relative to the run, or absolute outside it."""
    try:
        return path.relative_to(run.root).as_posix()
    except ValueError:
        return str(path.absolute())


def _resolve(run: RunDir, name: str) -> Path:
    path = Path(name)
    return path if path.is_absolute() else run.root / path


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def hash_file(path: Path) -> str:
    """The SHA-256 of ``path``'s bytes, as ``sha256:<hex>``; :data:`ABSENT` when it
    cannot be read."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except OSError:
        return ABSENT
    return "sha256:" + digest.hexdigest()


class Manifest:
    """The manifest of one run as read now: digests of its files (kept by stamp, so an
    unmoved file is not hashed again) and the entries of its derived files. Every change is
    written back at once, under a lock of its own (``.manifest.lock``), so that two
    processes reading one run (a notebook and the command line) never lose each other's
    entries; a run that cannot be written keeps its manifest as it is."""

    def __init__(self, run: RunDir, data: ManifestFile, *, new: bool) -> None:
        self.run = run
        self.data = data
        self.new = new
        self._dirty_seen = False

    # -- digests ---------------------------------------------------------------------------

    def digest(self, path: Path) -> str:
        """``path``'s digest now (:func:`hash_file`), from the manifest where its stamp has
        not moved since it was hashed."""
        at = _stamp(path)
        if at is None:
            return ABSENT
        name = _relative(self.run, path)
        seen = self.data.seen.get(name)
        if seen is not None and seen.stamp == at:
            return seen.digest
        value = hash_file(path)
        # A file modified within the last second may change again within the same
        # modification time (coarse clocks): its digest is used, not kept.
        if value != ABSENT and _settled(path):
            self.data.seen[name] = Seen(stamp=at, digest=value)
            self._dirty_seen = True
        return value

    def digests(self, paths: Sequence[Path]) -> dict[str, str]:
        """Each path's digest now, by its name in the manifest."""
        return {_relative(self.run, p): self.digest(p) for p in paths}

    # -- entries ---------------------------------------------------------------------------

    def entry(self, path: Path) -> Entry | None:
        """The entry of a derived file, or None where no step recorded one."""
        return self.data.files.get(_relative(self.run, path))

    def record(
        self,
        kind: str,
        *,
        step: str | None = None,
        options: Mapping[str, Any] | None = None,
        inputs: dict[str, str] | None = None,
        extra_inputs: Sequence[Path] = (),
    ) -> Entry:
        """Record that the files of ``kind`` were just written from their inputs as they
        are now (or ``inputs``: their digests taken before the step read them, so that a
        change during the step shows), under ``options``; ``extra_inputs`` are inputs
        outside the kind's own (the neutral files of an analysis)."""
        from ragaudit.version import __version__

        spec = KINDS[kind]
        found = inputs if inputs is not None else self.input_digests(kind, extra_inputs)
        outputs = spec.outputs(self.run)
        entry = Entry(
            kind=kind,
            step=step or spec.step,
            digest=self.digest(outputs[0]),
            outputs=self.digests(outputs),
            inputs=found,
            options=_plain(dict(options or {})),
            at=datetime.now(UTC).isoformat(timespec="seconds"),
            ragaudit=__version__,
        )
        self.put(_relative(self.run, outputs[0]), entry)
        return entry

    def put(self, name: str, entry: Entry) -> None:
        """Set the entry of the derived file ``name`` and write the manifest."""

        def change(data: ManifestFile) -> None:
            data.files[name] = entry

        self._update(change)

    def forget(self, kind: str) -> None:
        """Drop the entry of ``kind`` (its files were removed, or are being rewritten)."""
        name = _relative(self.run, KINDS[kind].outputs(self.run)[0])
        if name in self.data.files:
            self._update(lambda data: data.files.pop(name, None))

    def input_digests(self, kind: str, extra: Sequence[Path] = ()) -> dict[str, str]:
        """The digests now of every input of ``kind`` (and ``extra``)."""
        return self.digests([*KINDS[kind].inputs(self.run), *extra])

    def check(self, kind: str) -> Freshness:
        """Whether the files of ``kind`` are current: written by the step that recorded
        them, from their inputs as they are now (none added, none gone). Inputs outside
        the run that the entry names (neutral files) are checked too."""
        spec = KINDS[kind]
        output = spec.outputs(self.run)[0]
        entry = self.entry(output)
        name = output.name
        if not output.exists():
            return Freshness(kind, False, f"there is no {name}", entry)
        if entry is None:
            return Freshness(kind, False, f"no step recorded how {name} was made", entry)
        if self.digest(output) != entry.digest:
            return Freshness(
                kind, False, f"{name} is not the file {entry.step} wrote (changed since)", entry
            )
        for other, was in entry.outputs.items():
            if self.digest(_resolve(self.run, other)) != was:
                return Freshness(
                    kind,
                    False,
                    f"{Path(other).name} is not the file {entry.step} wrote (changed since)",
                    entry,
                )
        outside = [_resolve(self.run, n) for n in entry.inputs if Path(n).is_absolute()]
        outside += [p for p in spec.outside(entry.options) if p not in outside]
        now = self.input_digests(kind, outside)
        for input_name, was in entry.inputs.items():
            current = now.get(input_name, ABSENT)
            if current != was:
                if current == ABSENT:
                    change = "was removed"
                elif was == ABSENT:
                    change = "was written"
                else:
                    change = "changed"
                return Freshness(kind, False, f"{input_name} {change} since {name} was made", entry)
        for input_name, current in now.items():
            if input_name not in entry.inputs and current != ABSENT:
                return Freshness(
                    kind, False, f"{input_name} was written since {name} was made", entry
                )
        return Freshness(kind, True, None, entry)

    # -- writing ---------------------------------------------------------------------------

    def save(self) -> None:
        """Write the digests learnt while reading (a reader's only change)."""
        if self._dirty_seen:
            self._update(lambda data: None)

    def _update(self, change: Callable[[ManifestFile], Any]) -> None:
        """Apply ``change`` to the manifest on disk as it is now (another process may have
        written it since this one read it) and to this one, then write it."""
        change(self.data)
        seen = dict(self.data.seen)
        with _manifest_lock(self.run) as locked:
            if not locked:
                return
            on_disk = _read(self.run)
            merged = on_disk if on_disk is not None else ManifestFile()
            change(merged)
            merged.seen.update(seen)
            try:
                atomic_write_json(self.run.manifest, merged.model_dump(mode="json"))
            except OSError:
                return  # a run that cannot be written: the manifest stays as it was
            self.data = merged
            self._dirty_seen = False
            self.new = False


@dataclass(frozen=True)
class Freshness:
    """Whether the files of a kind are current, and why not."""

    kind: str
    current: bool
    why: str | None
    entry: Entry | None

    @property
    def options(self) -> dict[str, Any] | None:
        """The options the files were made with, where a step recorded them."""
        return None if self.entry is None else dict(self.entry.options)


def _settled(path: Path) -> bool:
    """Whether ``path`` was last modified more than a second ago (its stamp then names
    one content)."""
    import time

    try:
        return time.time() - path.stat().st_mtime > 1.0
    except OSError:
        return False


def _plain(value: Any) -> Any:
    """``value`` as JSON keeps it (paths as text, tuples as lists)."""
    return json.loads(json.dumps(value, default=str))


@contextlib.contextmanager
def _manifest_lock(run: RunDir) -> Iterator[bool]:
    """Hold the manifest's own lock for one read-modify-write; False where the run cannot
    be written (the change then stays in memory)."""
    try:
        run.root.mkdir(parents=True, exist_ok=True)
        handle = (run.root / ".manifest.lock").open("a+", encoding="utf-8")
    except OSError:
        yield False
        return
    try:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield True
    finally:
        handle.close()


def _read(run: RunDir) -> ManifestFile | None:
    """The manifest on disk; None where there is none, or it cannot be read as one of
    this format (every derived file is then stale until made again)."""
    try:
        text = run.manifest.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        data = ManifestFile.model_validate_json(text)
    except ValidationError:
        return None
    return data if data.format == FORMAT else None


def open_manifest(run: RunDir) -> Manifest:
    """The run's manifest. A run holding derived files and no manifest (written before the
    manifest existed, or with its manifest.json removed or unreadable) is fingerprinted
    now, said once (:func:`fingerprint_existing`); a run without any starts an empty one."""
    data = _read(run)
    if data is not None:
        return Manifest(run, data, new=False)
    manifest = Manifest(run, ManifestFile(), new=True)
    if any(kind.outputs(run)[0].exists() for kind in KINDS.values()):
        fingerprint_existing(manifest, unreadable=run.manifest.exists())
    return manifest


def fingerprint_existing(manifest: Manifest, *, unreadable: bool = False) -> list[str]:
    """Take in a run written before the manifest (or whose manifest is unreadable): its
    inputs are hashed now, and every derived file it holds is left stale, to be made
    again when read (a summary analyzed again with the options of the last ``analyze`` in
    provenance.json), since nothing but modification times could say what it was made
    from, and times lie (a file put back with ``cp -p``, an edit whose time was set back).
    ``unreadable``: a manifest.json was there but could not be read. Says what it did
    once; returns the stale files' names."""
    run = manifest.run
    stale: list[str] = []
    for kind in KINDS.values():
        output = kind.outputs(run)[0]
        if output.exists():
            manifest.input_digests(kind.name)  # hashed now: the next check reads them
            stale.append(output.name)
    manifest._update(lambda data: None)  # written now, so that it is said once
    what = f"stale, made again when read: {', '.join(stale)}" if stale else ""
    why = (
        f"{run.manifest} could not be read as a manifest of this ragaudit (it was replaced)"
        if unreadable
        else "written before ragaudit kept a manifest of what each file was made from"
    )
    notify(f"{run.root}: {why}; its files were fingerprinted now" + (f" ({what})" if what else ""))
    return stale


def provenance_options(run: RunDir, step: str) -> dict[str, Any]:
    """The options of ``step``'s last entry in the run's provenance.json that did not fail
    (``status`` done, or none: an entry written before steps said how they ended); none
    when it has no such entry or cannot be read."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
        steps = json.loads(run.provenance.read_text(encoding="utf-8"))["steps"]
        for item in reversed(steps):
            if item.get("step") == step and item.get("status", "done") == "done":
                return dict(item.get("options") or {})
    return {}
