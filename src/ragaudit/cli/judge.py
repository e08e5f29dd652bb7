"""``ragaudit judge``: every response judged, and how each was decided."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ragaudit.cli.common import project_for
from ragaudit.cli.console import console, err_console, print_dry_run
from ragaudit.cli.options import (
    ConfigOption,
    DryRunOption,
    FreeMetricChoice,
    LLMOption,
    RetrievalRuleOption,
    RetryFailedOption,
    SystemsOption,
)
from ragaudit.errors import UserError
from ragaudit.judge.retrieval import DEFAULT_RULE

if TYPE_CHECKING:
    from ragaudit.api.project import Project


def judge_cmd(
    config_path: ConfigOption = None,
    system: SystemsOption = None,
    samples: Annotated[
        int, typer.Option("--samples", min=1, help="Judge k times with the LLM; majority vote.")
    ] = 1,
    audit: Annotated[
        int, typer.Option("--audit", min=0, help="Re-judge N deterministic decisions with the LLM.")
    ] = 0,
    closed_domain: Annotated[
        bool,
        typer.Option(
            "--closed-domain",
            help="A retrieval miss, or a question no document holds, makes the answer incorrect.",
        ),
    ] = False,
    retrieval_rule: RetrievalRuleOption = DEFAULT_RULE,
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="Matchers only; undecided answers count incorrect.")
    ] = False,
    llm: LLMOption = None,
    reference_free: Annotated[
        bool,
        typer.Option(
            "--reference-free",
            help="Also score every response with the reference-free metrics "
            "(scores/<system>.jsonl); analyze then says how far each can be trusted.",
        ),
    ] = False,
    metric: Annotated[
        list[FreeMetricChoice] | None,
        typer.Option(
            "--metric",
            metavar="<metric>",  # the four choices would run past 80 columns: in the help
            help="With --reference-free: only this metric, faithfulness, answer_relevancy, "
            "context_precision or self_consistency (repeatable; default: the "
            "reference_free section's).",
        ),
    ] = None,
    retry_failed: RetryFailedOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Judge every response: deterministic matchers first, the LLM judge for the rest;
    writes judgements/<system>.jsonl (resumable). With --reference-free, also the
    reference-free metrics (faithfulness, answer relevancy, context precision,
    self-consistency) into scores/<system>.jsonl."""
    from ragaudit.api.project import PROJECT_LLM
    from ragaudit.judge.retrieval import check_rule
    from ragaudit.steps.judge import require_judged

    check_rule(retrieval_rule)
    if metric and not reference_free:
        raise UserError("--metric chooses reference-free metrics: add --reference-free")
    if reference_free and no_llm:
        raise UserError("--reference-free asks the LLM: it cannot go with --no-llm")
    project = project_for(config_path, llm=llm)
    if dry_run:
        if reference_free or audit:
            raise UserError(
                "--dry-run counts the judge's requests: run it without --reference-free and "
                "--audit (their requests are not estimated)"
            )
        print_dry_run(
            project.judge(
                None if no_llm else PROJECT_LLM,
                systems=system,
                samples=samples,
                closed_domain=closed_domain,
                retrieval_rule=retrieval_rule,
                dry_run=True,
            )
        )
        return
    report = project.judge(
        None if no_llm else PROJECT_LLM,
        systems=system,
        samples=samples,
        audit=audit,
        closed_domain=closed_domain,
        retrieval_rule=retrieval_rule,
        check=False,  # the report is printed first, then checked
        retry_failed=retry_failed,
    )
    for warning in report.warnings:
        err_console.print(f"warning: {warning}", markup=False, style="yellow")
    for name, entry in report.systems.items():
        methods = ", ".join(f"{m} {n}" for m, n in sorted(entry.methods.items()))
        console.print(
            f"{name}: judged {entry.judged_now} now, {entry.already_judged} "
            f"before ({methods or 'nothing new'})",
            markup=False,
        )
        if entry.repeats is not None:
            r = entry.repeats
            methods = ", ".join(f"{m} {n}" for m, n in sorted(r.methods.items()))
            failed = f"; {r.judge_failed} failed, left out" if r.judge_failed else ""
            console.print(
                f"  repeats: judged {r.judged_now} now ({r.reused} took the verdict of the "
                f"same answer), {r.already_judged} before ({methods or 'nothing new'}{failed})",
                markup=False,
            )
        if entry.llm_sample_agreement is not None:
            console.print(f"  LLM sample agreement: {entry.llm_sample_agreement:.0%}", markup=False)
        if entry.audit is not None:
            a = entry.audit
            failed = f" ({a.failed} could not be re-judged)" if a.failed else ""
            console.print(
                f"  audit: {a.disagreements} of {a.audited} deterministic "
                f"decisions disagree with the LLM judge{failed}",
                markup=False,
            )
        if entry.judge_failed:
            first = entry.judge_failures[0]
            console.print(
                f"  {entry.judge_failed} judgements failed, recorded as judge-failed and "
                f"left out of the analysis (first: {first.query_id}: {first.reason}); "
                "rerun ragaudit judge to retry them (with --retry-failed, replies that "
                "could not be read are asked for again)",
                markup=False,
            )
    require_judged(report)
    if reference_free:
        _score(project, system, [m.value for m in metric or []], retry_failed)


def _score(
    project: Project, systems: list[str] | None, metrics: list[str], retry_failed: bool
) -> None:
    """Score the responses with the reference-free metrics, and say what could not be."""
    entries = project.score(metrics or None, systems=systems, retry_failed=retry_failed)
    for name, entry in entries.items():
        calls = ", ".join(f"{m} {n}" for m, n in entry.calls.items())
        console.print(
            f"{name}: scored {entry.scored_now} now, {entry.already_scored} before"
            + (f" (LLM requests: {calls})" if calls else ""),
            markup=False,
        )
        for metric_name, reasons in entry.undefined.items():
            why = "; ".join(f"{n} {r}" for r, n in reasons.most_common())
            console.print(f"  {metric_name} undefined for {why}", markup=False)
