"""``ragaudit export``: a run's results where the user's other tools read them. To MLflow
(the run's configuration as parameters, the summary's figures as metrics with their
interval bounds, report.html, summary.json and the answer table as artifacts), or as plain
CSV or Parquet tables for anything else.

A run is exported from what earlier steps wrote, as current as its records: a summary (or
a report) whose inputs changed since it was written is made again first, with the options
recorded for it (:func:`~ragaudit.steps.analyze.current_summary`), and said so. A second
export of the same run to the same MLflow experiment updates its MLflow run instead of
making another, as long as the run's configuration is the same (MLflow never changes a
logged parameter) and every metric logged before is logged again: a run analyzed again
with another configuration, or one of whose figures became undefined (or went away),
gets a new MLflow run, and the old one is tagged as superseded by it, since MLflow cannot
delete a metric and an undefined figure must not stand as a number."""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import yaml

from ragaudit.errors import UserError
from ragaudit.judge.retrieval import check_rule
from ragaudit.rundir import RunDir
from ragaudit.secrets import mask_url, redact

if TYPE_CHECKING:
    import pyarrow as pa

    from ragaudit.analysis.summary import Summary

# The tag that names the run directory an MLflow run was exported from.
RUN_TAG = "ragaudit.run_dir"
SUPERSEDED_TAG = "ragaudit.superseded_by"
# On the new MLflow run: the one it supersedes, and why it is a new one.
SUPERSEDES_TAG = "ragaudit.supersedes"
# The tag of a figure that is undefined, by its name, with why.
UNDEFINED_TAG = "ragaudit.undefined."
# MLflow's rule for metric and parameter names (letters, digits, _ - . space / :).
_NAME_UNSAFE = re.compile(r"[^\w\-. /:]")
_PARAM_MAX = 6000  # MLflow's limit on a parameter's value

TableFormat = Literal["csv", "parquet"]


@dataclass
class MlflowExport:
    """What an export to MLflow did: the MLflow run (``run_id``; ``updated``: an earlier
    export's run was updated rather than a new one made), what was logged, and the figures
    left out because they are undefined (an MLflow metric cannot be null)."""

    tracking_uri: str
    experiment: str
    run_id: str
    updated: bool
    params: int
    metrics: int
    artifacts: list[str]
    undefined: list[str] = field(default_factory=list)
    # The earlier MLflow run this one supersedes (another configuration, or a figure it
    # holds that is undefined or gone now: ``why_new``).
    superseded: str | None = None
    why_new: str | None = None


def _summary(run: RunDir) -> Summary:
    """The run's summary as current as its records (made again where it is stale)."""
    from ragaudit.steps.analyze import current_summary

    return current_summary(run, by="export")


def _name(text: str) -> str:
    """``text`` as an MLflow metric or parameter name (``recall@5`` -> ``recall_5``)."""
    return _NAME_UNSAFE.sub("_", text)


def _params(run: RunDir) -> dict[str, str]:
    """The run's configuration (the resolved ragaudit.yaml the last step wrote, secrets
    already masked) flattened to dotted names; lists and long values as JSON text."""
    if not run.config.is_file():
        return {}
    data = yaml.safe_load(run.config.read_text(encoding="utf-8")) or {}
    out: dict[str, str] = {}

    def walk(value: Any, prefix: str) -> None:
        if isinstance(value, dict) and value:
            for key, item in value.items():
                walk(item, f"{prefix}.{key}" if prefix else str(key))
            return
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        out[_name(prefix)] = text[:_PARAM_MAX]

    walk(data, "")
    return out


class FigureRow(NamedTuple):
    """One figure of a summary as the exports give it: its name, its value with its 95%
    interval, and why it is undefined (``value`` None)."""

    name: str
    value: float | None
    low: float | None
    high: float | None
    undefined: str | None = None


def figure_rows(summary: Summary) -> list[FigureRow]:
    """Every figure of the summary: ``system/variant/metric`` for the proportions,
    ``system/variant/retrieval/<metric>`` for the ranking metrics, and, for a run with
    repeats, ``system/variant/stability/mean_pass_rate`` and ``.../stability/flaky``
    (``variant`` ``all`` for the whole system)."""
    rows: list[FigureRow] = []
    reasons = _undefined_reasons(summary)
    for row in summary.rows():
        name = f"{row['system']}/{row['variant']}/{row['metric']}"
        why = None
        if row["value"] is None:
            why = reasons.get((row["system"], row["variant"], row["metric"])) or (
                "nothing to count (n = 0)" if not row["n"] else "not measurable on this run"
            )
        rows.append(FigureRow(name, row["value"], row["low"], row["high"], why))
    for system, ranking in summary.retrieval_ranking.items():
        for variant, metrics in ranking.variants.items():
            for metric, mean in metrics.items():
                name = f"{system}/{variant}/retrieval/{metric}"
                why = None if mean.value is not None else "no query with gold ids was scored"
                rows.append(FigureRow(name, mean.value, mean.ci95[0], mean.ci95[1], why))
    for system, figures in summary.stability.items():
        cores = {"all": figures, **figures.variants}
        for variant, core in cores.items():
            base = f"{system}/{variant}/stability"
            mean = core.mean_pass_rate
            rows.append(
                FigureRow(
                    f"{base}/mean_pass_rate",
                    mean.value,
                    mean.ci95[0],
                    mean.ci95[1],
                    None if mean.value is not None else "no query was judged",
                )
            )
            flaky = core.flaky
            rows.append(
                FigureRow(
                    f"{base}/flaky",
                    flaky.value,
                    flaky.ci95[0],
                    flaky.ci95[1],
                    None if flaky.value is not None else "no query was judged twice",
                )
            )
    return rows


def _undefined_reasons(summary: Summary) -> dict[tuple[str, str, str], str]:
    """Why R (and retrieval R) is undefined where the summary says why: (system, variant,
    metric) -> the reason."""
    out: dict[tuple[str, str, str], str] = {}
    for system, figures in summary.systems.items():
        for variant, v in figures.variants.items():
            if v.robustness_undefined:
                for metric in ("robustness", "robustness_retrieval"):
                    out[system, variant, metric] = v.robustness_undefined
    return out


def export_mlflow(
    run: RunDir, *, tracking_uri: str | None = None, experiment: str = "ragaudit"
) -> MlflowExport:
    """Log the run to MLflow (``tracking_uri``: MLflow's own default when None, i.e.
    ``MLFLOW_TRACKING_URI``): parameters, metrics with ``_low``/``_high`` bounds,
    report.html, summary.json and answers.parquet; an earlier export of the same run with
    the same configuration is updated."""
    try:
        from mlflow.exceptions import MlflowException
    except ImportError:
        raise UserError(
            "export to MLflow needs the mlflow extra: pip install 'ragaudit[mlflow]'"
        ) from None

    summary = _summary(run)
    params = _params(run)
    key = str(run.root.resolve())
    # The URI as it may be shown: its password and token parameters masked (and known as
    # secrets, so that MLflow's own messages quoting it are masked too).
    where = mask_url(tracking_uri) if tracking_uri else "its default tracking URI"
    try:
        with _few_retries():
            return _log_to_mlflow(run, summary, params, key, tracking_uri, experiment)
    except MlflowException as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(redact(f"MLflow ({where}): {first}")) from None


@contextlib.contextmanager
def _few_retries() -> Iterator[None]:
    """MLflow's HTTP client retries a refused connection for minutes (7 retries with
    backoff) while the run's lock is held: two retries, unless the user set their own."""
    name = "MLFLOW_HTTP_REQUEST_MAX_RETRIES"
    before = os.environ.get(name)
    if before is None:
        os.environ[name] = "2"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)


def _log_to_mlflow(
    run: RunDir,
    summary: Summary,
    params: dict[str, str],
    key: str,
    tracking_uri: str | None,
    experiment: str,
) -> MlflowExport:
    """:func:`export_mlflow`'s work, MLflow's errors left to it."""
    import time

    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    earlier = client.search_runs(
        [experiment_id],
        filter_string=f"tags.`{RUN_TAG}` = '{key}'",
        order_by=["attributes.start_time DESC"],
    )
    current = [r for r in earlier if SUPERSEDED_TAG not in r.data.tags]
    now = int(time.time() * 1000)
    metrics: list[Metric] = []
    undefined: list[str] = []
    undefined_tags: list[RunTag] = []
    for row in figure_rows(summary):
        if row.value is None:
            # Never NaN: an undefined figure is not logged, it is tagged with why.
            undefined.append(row.name)
            undefined_tags.append(
                RunTag(_name(UNDEFINED_TAG + row.name), row.undefined or "undefined")
            )
            continue
        for suffix, number in (("", row.value), ("_low", row.low), ("_high", row.high)):
            if number is not None:
                metrics.append(Metric(_name(row.name + suffix), float(number), now, 0))
    logged = {m.key for m in metrics}
    reuse = current[0] if current and current[0].data.params == params else None
    why_new = None
    if current and reuse is None:
        before = current[0].data.params
        changed = sorted(k for k in {*before, *params} if before.get(k) != params.get(k))
        why_new = (
            f"the run's configuration changed since its last export ({changed[0]}"
            + (f" and {len(changed) - 1} more" if len(changed) > 1 else "")
            + "; MLflow never changes a logged parameter)"
        )
    if reuse is not None:
        # A metric of the earlier export that is not logged now would stand at its old
        # value (MLflow cannot delete one): the figures go to a new MLflow run.
        left = sorted(set(reuse.data.metrics) - logged)
        if left:
            why_new = f"{left[0]} is no longer a figure of this run (undefined, or gone)"
            reuse = None
    superseded = None
    if reuse is not None:
        run_id = reuse.info.run_id
        client.update_run(run_id, status="RUNNING")
        undefined_now = {t.key for t in undefined_tags}
        for tag in reuse.data.tags:
            if tag.startswith(UNDEFINED_TAG) and tag not in undefined_now:
                client.delete_tag(run_id, tag)  # defined again
    else:
        made = client.create_run(experiment_id, run_name=run.root.name, tags={RUN_TAG: key})
        run_id = made.info.run_id
        if current:
            superseded = current[0].info.run_id
            client.set_tag(superseded, SUPERSEDED_TAG, run_id)
            client.set_tag(run_id, SUPERSEDES_TAG, f"{superseded}: {why_new}")
    # MLflow takes at most 1000 metrics and 100 parameters (or tags) per batch.
    if reuse is None:
        items = [Param(k, v) for k, v in params.items()]
        for start in range(0, len(items), 100):
            client.log_batch(run_id, params=items[start : start + 100])
    for start in range(0, len(metrics), 1000):
        client.log_batch(run_id, metrics=metrics[start : start + 1000])
    tags = [RunTag("ragaudit.undefined_figures", str(len(undefined))), *undefined_tags]
    for start in range(0, len(tags), 100):
        client.log_batch(run_id, tags=tags[start : start + 100])
    artifacts = _log_artifacts(client, run_id, run)
    client.set_terminated(run_id)
    return MlflowExport(
        tracking_uri=mask_url(str(client.tracking_uri)),
        experiment=experiment,
        run_id=run_id,
        updated=reuse is not None,
        params=len(params),
        metrics=len(metrics),
        artifacts=artifacts,
        undefined=undefined,
        superseded=superseded,
        why_new=why_new,
    )


def _log_artifacts(client: Any, run_id: str, run: RunDir) -> list[str]:
    """report.html and summary.json as they are, and the answer table as Parquet (built
    from the JSON Lines where answers.parquet is stale)."""
    from ragaudit.records.io import write_parquet_atomic
    from ragaudit.steps.report import current_report
    from ragaudit.store.answers import read_answer_table

    logged: list[str] = []
    if run.report.is_file():
        current_report(run, by="export")
    for path in (run.report, run.summary):
        if path.is_file():
            client.log_artifact(run_id, str(path))
            logged.append(path.name)
    if run.dataset.is_file():
        with tempfile.TemporaryDirectory(prefix="ragaudit-export-") as folder:
            table = Path(folder) / "answers.parquet"
            write_parquet_atomic(table, read_answer_table(run, write=False))
            client.log_artifact(run_id, str(table))
            logged.append(table.name)
    return logged


def export_tables(run: RunDir, out: Path, fmt: TableFormat = "parquet") -> list[Path]:
    """Write the run's results as plain tables into ``out`` (``csv`` or ``parquet``):
    ``figures`` (one row per system x variant x metric, with its interval and n),
    ``comparisons`` (which system or wording is worse, by how much), ``ranking`` (the
    retrieval metrics), ``stability`` (each system's pass rates over repeated askings,
    ``run --repeat N``; no rows without repeats) and ``answers`` (one row per answer: the
    answer table); returns the files written, each replaced atomically. List columns
    (retrieved ids, scores) are JSON text in CSV. Undefined figures are empty cells (CSV)
    or nulls (Parquet), never NaN."""
    import pandas as pd

    from ragaudit.records.io import atomic_write_text, write_parquet_atomic
    from ragaudit.store.answers import read_answer_table

    if fmt not in ("csv", "parquet"):
        raise UserError(f"export: format {fmt!r}: use csv or parquet")
    if out.exists() and not out.is_dir():
        raise UserError(f"export: {out} is a file, not a folder")
    if out.resolve() == run.root.resolve() or run.root.resolve() in out.resolve().parents:
        raise UserError(f"export: {out} is inside the run folder: give a folder outside it")
    summary = _summary(run)
    frames: dict[str, pd.DataFrame] = {
        "figures": summary.to_pandas(),
        "comparisons": summary.comparisons_to_pandas(),
        "ranking": summary.ranking_to_pandas(),
        "stability": summary.stability_to_pandas(),
    }
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    answers = read_answer_table(run, write=False) if run.dataset.is_file() else None
    if answers is not None:
        answers = _under_rule(answers, summary.retrieval_rule)
    for name, frame in frames.items():
        path = out / f"{name}.{fmt}"
        if fmt == "csv":
            atomic_write_text(path, frame.to_csv(index=False))
        else:
            import pyarrow as pa

            write_parquet_atomic(path, pa.Table.from_pandas(frame, preserve_index=False))
        written.append(path)
    if answers is not None:
        path = out / f"answers.{fmt}"
        if fmt == "parquet":
            write_parquet_atomic(path, answers)
        else:
            frame = answers.to_pandas()
            for column in frame.columns:
                if frame[column].map(lambda v: isinstance(v, list | tuple | dict)).any():
                    frame[column] = frame[column].map(
                        lambda v: None if v is None else json.dumps(_plain(v), default=str)
                    )
            atomic_write_text(path, frame.to_csv(index=False))
        written.append(path)
    return written


def _under_rule(answers: pa.Table, rule: str) -> pa.Table:
    """The answer table with its retrieval verdicts given by ``rule``, the rule of the
    figures exported beside it (``analyze --retrieval-rule`` may differ from the judge's),
    and a ``retrieval_rule`` column naming it, so that answers and figures count alike.
    Where the figures mix rules (judgements given under several, which analyze warns
    of) each row keeps the judge's verdict, and the column says the rules mixed."""
    import pyarrow as pa

    from ragaudit.judge.retrieval import retrieval_correct
    from ragaudit.store.answers import RULES_KEY

    raw = (answers.schema.metadata or {}).get(RULES_KEY)
    judged = set(json.loads(raw)) if raw else set()
    try:
        check_rule(rule)
    except UserError:  # "all_gold and any_hit": several rules, as judged
        single = False
    else:
        single = True
    if single and judged and judged != {rule}:
        # Given again where the judge gave one (an unjudged answer has none yet).
        verdicts = [
            None
            if was is None
            else retrieval_correct(ids or [], gold, rule, failed=error is not None)
            for was, ids, gold, error in zip(
                answers.column("retrieval_correct").to_pylist(),
                answers.column("retrieved_ids").to_pylist(),
                answers.column("gold_ids").to_pylist(),
                answers.column("error").to_pylist(),
                strict=True,
            )
        ]
        index = answers.schema.get_field_index("retrieval_correct")
        answers = answers.set_column(
            index, "retrieval_correct", pa.array(verdicts, type=pa.bool_())
        )
    named = rule if single else " and ".join(sorted(judged)) or rule
    at = answers.schema.get_field_index("retrieval_correct") + 1
    return answers.add_column(at, "retrieval_rule", pa.array([named] * answers.num_rows))


def _plain(value: Any) -> Any:
    """Arrow's list and struct values (numpy arrays, tuples) as plain lists and dicts."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
