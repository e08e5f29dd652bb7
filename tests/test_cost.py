"""Cost in money (issue 38, part 3): prices per model, the cost of every step, system,
accepted pair and verified wording, adding up to the usage records exactly; the dry runs
of generate, run and judge, which spend and write nothing."""

from __future__ import annotations

import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from ragaudit.llm.prices import (
    DEFAULT_PRICES,
    EMBEDDED_NOTE,
    PRICES_READ,
    ModelPrice,
    model_cost,
    price_of,
)
from ragaudit.llm.usage import UsageFile, UsageMeter, usage_part
from tests.support.cli import ragaudit
from tests.support.scripted_llm_server import ScriptedLLMServer
from tests.test_judge_cli import _env, _judge_responder, _run_dir

MILLION = Decimal(1_000_000)


def _usd(value: float | None) -> Decimal:
    assert value is not None
    return Decimal(str(value))


def test_a_configured_price_wins_over_the_dated_default_table() -> None:
    assert PRICES_READ and "gpt-4o-mini" in DEFAULT_PRICES
    default = price_of("openai:gpt-4o-mini")
    assert default is not None and PRICES_READ in default.source
    own = price_of("openai:gpt-4o-mini", {"openai:gpt-4o-mini": ModelPrice(input=1, output=2)})
    assert own is not None and (own.input, own.output, own.source) == (1, 2, "llm.prices")
    # A name the default table has, on a server of the user's (vLLM...), is overridable too.
    by_name = price_of("openai:gpt-4o", {"gpt-4o": ModelPrice(input=0, output=0)})
    assert by_name is not None and by_name.output == 0


def test_the_embedded_model_costs_zero_and_says_so() -> None:
    for model in ("local", "local:/models/qwen.gguf"):
        cost, price = model_cost(model, 120_000, 30_000)
        assert cost.usd == 0 and cost.note == EMBEDDED_NOTE
        assert price is not None and price.source == "embedded"


def test_the_usage_table_of_the_embedded_model_fits_80_columns_with_its_step_names() -> None:
    """Issue 41's trial: at 80 columns the usage table folded "generate-documents" into
    "generate-docu" / "ments" beside a cost column of $0 on every row. Where every cost is
    $0 the column goes and the caption says it; a priced step keeps its column; seconds
    past 100 are whole (a 38-minute run's "2265.31" folded it again)."""
    from rich.console import Console

    from ragaudit.cli.console import usage_table

    def printed(meter: UsageMeter) -> str:
        console = Console(width=80, record=True, file=io.StringIO())
        console.print(usage_table(meter))
        return console.export_text()

    meter = UsageMeter()
    with meter.step("generate-documents"):
        meter.record_call(prompt_tokens=99872, completion_tokens=23061, seconds=2265.31)
        meter.record_call(prompt_tokens=1, completion_tokens=1, seconds=0.1, model="local")
    meter.steps["generate-documents"].models.pop("unknown")  # the embedded model's alone
    text = printed(meter)
    assert any(line.startswith("generate-documents ") for line in text.splitlines()), text
    assert " 2265 " in text  # a long run's seconds, whole
    assert "cost" not in text.splitlines()[1]  # the header row
    assert "cost: " + EMBEDDED_NOTE in " ".join(text.split())
    free = UsageMeter({"openai:m": ModelPrice(input=0, output=0)})
    with free.step("judge"):
        free.record_call(prompt_tokens=10, completion_tokens=1, seconds=1, model="openai:m")
    assert "cost: $0 throughout" in printed(free)
    priced = UsageMeter({"openai:m": ModelPrice(input=1, output=1)})
    with priced.step("judge"):
        priced.record_call(
            prompt_tokens=1_000_000, completion_tokens=0, seconds=1, model="openai:m"
        )
    assert printed(priced).splitlines()[1].rstrip().endswith("cost")


def test_a_model_without_a_price_has_no_cost_never_a_made_up_zero() -> None:
    cost, price = model_cost("openai:my-vllm-model", 1000, 10)
    assert cost.usd is None and price is None
    assert cost.reason is not None and "llm.prices" in cost.reason
    # Nothing billed is nothing spent, whatever the price.
    assert model_cost("openai:my-vllm-model", 0, 0)[0].usd == 0


def test_a_steps_cost_adds_up_its_models_and_parts_exactly(tmp_path: Path) -> None:
    prices = {"scripted:a": ModelPrice(input=0.15, output=0.6)}
    meter = UsageMeter(prices)
    with meter.step("run"):
        with usage_part("sys1"):
            meter.record_call(prompt_tokens=1234, completion_tokens=77, seconds=0.1, model="local")
            meter.record_call(
                prompt_tokens=999, completion_tokens=333, seconds=0.1, model="openai:gpt-4o"
            )
        with usage_part("sys2"):
            meter.record_call(prompt_tokens=3, completion_tokens=7, seconds=0.1, model="scripted:a")
            meter.record_cache_hit("scripted:a")
    with meter.step("judge"):
        meter.record_call(prompt_tokens=500, completion_tokens=11, seconds=0.1, model="scripted:a")
    path = tmp_path / "usage.json"
    meter.write(path)
    usage = UsageFile.read(path)
    run, judge = usage.costs["run"], usage.costs["judge"]
    # Each model's cost is its billed tokens at its price, by hand.
    gpt4o = DEFAULT_PRICES["gpt-4o"]
    assert (
        _usd(run.models["openai:gpt-4o"].usd)
        == (999 * Decimal(str(gpt4o.input)) + 333 * Decimal(str(gpt4o.output))) / MILLION
    )
    by_hand = (3 * Decimal("0.15") + 7 * Decimal("0.6")) / MILLION
    assert _usd(run.models["scripted:a"].usd) == by_hand
    assert run.models["local"].usd == 0
    # The step is the sum of its models, the parts split it, the total sums the steps.
    assert _usd(run.usd) == sum(_usd(m.usd) for m in run.models.values())
    assert _usd(run.usd) == sum(_usd(p.usd) for p in run.parts.values())
    assert usage.total is not None
    assert _usd(usage.total.usd) == _usd(run.usd) + _usd(judge.usd)
    # The tokens per model add up to the step's, and the cache hit is counted, not billed.
    step = usage.steps["run"]
    assert sum(m.prompt_tokens for m in step.models.values()) == step.prompt_tokens
    assert step.parts["sys2"]["scripted:a"].cache_hits == 1
    assert EMBEDDED_NOTE in (run.note or "")


def test_an_unpriced_model_makes_its_step_and_the_total_unknown(tmp_path: Path) -> None:
    meter = UsageMeter()
    with meter.step("judge"):
        meter.record_call(prompt_tokens=5, completion_tokens=5, seconds=0, model="openai:x")
    meter.write(tmp_path / "usage.json")
    usage = UsageFile.read(tmp_path / "usage.json")
    assert usage.costs["judge"].usd is None and usage.total is not None
    assert usage.total.usd is None and "openai:x" in (usage.total.reason or "")


def _prices_yaml(root: Path, model: str, price_in: float, price_out: float) -> None:
    (root / "ragaudit.yaml").write_text(
        f"llm:\n  prices:\n    {model}: {{input: {price_in}, output: {price_out}}}\n",
        encoding="utf-8",
    )


def _hand_cost(requests: list[dict[str, Any]], price_in: str, price_out: str) -> Decimal:
    """What the scripted server's usage figures cost, counted as it counts them: the
    words of the request's messages in, the words of its reply out."""
    total = Decimal(0)
    for body in requests:
        prompt = sum(len(str(m["content"]).split()) for m in body["messages"])
        completion = len(_judge_responder(body).split())
        total += prompt * Decimal(price_in) + completion * Decimal(price_out)
    return total / MILLION


def test_the_cost_of_judging_on_a_server_that_reports_usage_matches_a_hand_computation(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    llm_server.responder = _judge_responder
    root = _run_dir(tmp_path)
    _prices_yaml(tmp_path, "judge", 2.5, 10)
    result = ragaudit("judge", "--llm", "openai:judge", cwd=tmp_path, env=_env(llm_server))
    assert result.returncode == 0, result.stderr
    assert llm_server.request_count == 2
    expected = _hand_cost(llm_server.requests, "2.5", "10")
    usage = json.loads((root / "usage.json").read_text())
    assert _usd(usage["costs"]["judge"]["usd"]) == expected
    assert _usd(usage["costs"]["judge"]["models"]["openai:judge"]["usd"]) == expected
    assert usage["costs"]["judge"]["models"]["openai:judge"]["price"]["source"] == "llm.prices"
    assert _usd(usage["total"]["usd"]) == expected
    # The usage table prints it, and a rerun from the cache... asks nothing and costs 0.
    assert "cost" in result.stdout and f"${float(expected):.6f}".rstrip("0") in result.stdout
    analyzed = ragaudit("analyze", cwd=tmp_path)
    assert analyzed.returncode == 0, analyzed.stderr
    cost = json.loads((root / "summary.json").read_text())["cost"]
    assert _usd(cost["total"]["usd"]) == expected
    step = cost["steps"]["judge"]
    assert step["calls"] == 2 and _usd(step["cost"]["usd"]) == expected
    assert step["models"]["openai:judge"]["price_input"] == 2.5
    markdown = (root / "summary.md").read_text(encoding="utf-8")
    shown = f"${float(expected):.6f}".rstrip("0")
    assert f"\nCost: {shown} (each step's last run" in markdown
    assert (
        f"| judge | 2 | 0 | {step['prompt_tokens']} | {step['completion_tokens']} | {shown} |"
        in markdown
    )
    report = ragaudit("report", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    html = (root / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="cost">Cost</h2>' in html and f"${float(expected):.6f}".rstrip("0") in html


@pytest.mark.parametrize("model", ["openai:unpriced"])
def test_a_judge_without_a_price_says_why_its_cost_is_unknown(
    llm_server: ScriptedLLMServer, tmp_path: Path, model: str
) -> None:
    llm_server.responder = _judge_responder
    root = _run_dir(tmp_path)
    result = ragaudit("judge", "--llm", model, cwd=tmp_path, env=_env(llm_server))
    assert result.returncode == 0, result.stderr
    assert "n/a" in result.stdout and "no price for openai:unpriced" in result.stdout
    usage = json.loads((root / "usage.json").read_text())
    assert usage["total"]["usd"] is None and "llm.prices" in usage["total"]["reason"]


def _listing(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): p.stat().st_mtime_ns
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_the_dry_run_of_judge_asks_and_writes_nothing_and_says_0_for_a_cached_rerun(
    llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    llm_server.responder = _judge_responder
    root = _run_dir(tmp_path)
    _prices_yaml(tmp_path, "judge", 2.5, 10)
    before = _listing(tmp_path)
    dry = ragaudit(
        "judge", "--llm", "openai:judge", "--dry-run", cwd=tmp_path, env=_env(llm_server)
    )
    assert dry.returncode == 0, dry.stderr
    assert llm_server.request_count == 0 and _listing(tmp_path) == before  # nothing asked, written
    # The two answers the matchers leave undecided (q2, q3) would be asked.
    assert "would spend 2 LLM requests (0 more from the cache, free)" in dry.stdout
    assert (
        ragaudit("judge", "--llm", "openai:judge", cwd=tmp_path, env=_env(llm_server)).returncode
        == 0
    )
    assert llm_server.request_count == 2
    # Everything judged: nothing left to ask.
    again = ragaudit(
        "judge", "--llm", "openai:judge", "--dry-run", cwd=tmp_path, env=_env(llm_server)
    )
    assert "would spend 0 LLM requests (0 more from the cache, free), 0 tokens, $0" in again.stdout
    # The verdicts gone but their requests in the cache: still 0, both from the cache.
    (root / "judgements" / "rag.jsonl").unlink()
    cached = ragaudit(
        "judge", "--llm", "openai:judge", "--dry-run", cwd=tmp_path, env=_env(llm_server)
    )
    assert "would spend 0 LLM requests (2 more from the cache, free)" in cached.stdout
    judged = ragaudit("judge", "--llm", "openai:judge", cwd=tmp_path, env=_env(llm_server))
    assert judged.returncode == 0 and llm_server.request_count == 2  # as the dry run said


def test_the_dry_run_of_run_counts_what_the_resume_leaves_and_prices_it(
    llm_server: ScriptedLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ragaudit as ra
    from ragaudit.config import Config

    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-t-0000000000")
    config = Config.model_validate(
        {
            "llm": {"model": "openai:m", "prices": {"m": {"input": 0.5, "output": 1.5}}},
            "systems": [{"name": "memory", "generator": "llm_only"}],
        }
    )
    project = ra.Project(config, root=tmp_path, db="example", progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    project.generate(unverified=True)
    before = _listing(tmp_path)
    dry = project.run(limit=5, dry_run=True)
    assert llm_server.request_count == 0 and _listing(tmp_path) == before
    (line,) = dry.lines
    assert (line.what, line.model, line.items, line.requests) == ("system memory", "openai:m", 5, 5)
    assert line.tokens_from.startswith("estimated") and dry.cost.usd is not None
    assert dry.cost.usd == model_cost("openai:m", line.prompt_tokens, line.completion_tokens,
                                      project.config.llm.prices)[0].usd  # fmt: skip
    project.run(limit=5)
    assert llm_server.request_count == 5
    # The cost of the systems answered adds up to the usage records, and by hand.
    usage = json.loads((project.run_dir / "usage.json").read_text())
    step = usage["steps"]["run"]["models"]["openai:m"]
    by_hand = step["prompt_tokens"] * Decimal("0.5") + step["completion_tokens"] * Decimal("1.5")
    assert _usd(usage["costs"]["run"]["parts"]["memory"]["usd"]) == by_hand / MILLION
    # A rerun of what is done asks nothing; more queries are priced from the answers measured.
    assert project.run(limit=5, dry_run=True).requests == 0
    more = project.run(limit=8, dry_run=True)
    assert more.requests == 3 and more.lines[0].tokens_from == "mean of 5 earlier answers of memory"
    assert project.run(limit=5, rerun=True, dry_run=True).requests == 5
    assert llm_server.request_count == 5
    # summary.json's cost per system answered: its part of the run over its askings.
    from ragaudit.rundir import RunDir
    from ragaudit.steps.cost import cost_figures

    figures = cost_figures(RunDir(project.run_dir))
    assert figures is not None
    memory = figures.per_system["memory"]
    assert memory.units == 5 and _usd(memory.cost.usd) == by_hand / MILLION
    assert _usd(memory.each.usd) == (by_hand / MILLION / 5).quantize(Decimal("1e-10"))
    assert _usd(figures.total.usd) == _usd(figures.steps["run"].cost.usd)


def test_the_dry_run_of_run_prices_a_new_system_from_the_caches_answers_only(
    tmp_path: Path,
) -> None:
    """A model's cache holds every step's calls (wordings, verdicts) beside its answers:
    a system never run is priced from the answering calls among them, never from the
    mean of all (which a long wording prompt doubles)."""
    import ragaudit as ra
    from ragaudit.config import Config
    from ragaudit.llm.cache import LLMCache, request_payload
    from ragaudit.llm.types import GenerationParams, RawCompletion, system, user
    from ragaudit.rundir import RunDir
    from ragaudit.steps.session import cache_path_of
    from ragaudit.systems.answer_prompts import answer_messages

    config = Config.model_validate(
        {"llm": {"model": "openai:m"}, "systems": [{"name": "memory", "generator": "llm_only"}]}
    )
    project = ra.Project(config, root=tmp_path, db="example", progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    project.generate(unverified=True)
    run = RunDir(project.run_dir)
    cache = LLMCache(cache_path_of(project.config, run, "openai:m"))

    def put(key: str, messages: list, prompt: int, completion: int) -> None:
        payload = request_payload("openai", "m", messages, GenerationParams())
        cache.put(key, payload, RawCompletion("x", prompt, completion))

    for i in range(4):  # the wording step's calls: long prompts
        put(f"w{i}", [system("Write wordings of an SQL template."), user(f"t{i}")], 3000, 400)
    cache.flush()
    line = project.run(limit=5, dry_run=True).lines[0]
    assert line.tokens_from.startswith("estimated"), line.tokens_from
    assert line.prompt_tokens < 5 * 3000
    for i in range(2):
        put(f"a{i}", answer_messages("llm_only", f"question {i}?", []), 50, 6)
    cache.close()
    line = project.run(limit=5, dry_run=True).lines[0]
    assert line.tokens_from == "mean of 2 answers of openai:m in its cache"
    assert (line.prompt_tokens, line.completion_tokens) == (5 * 50, 5 * 6)


def test_the_dry_run_of_generate(tmp_path: Path) -> None:
    from ragaudit.config import Config
    from ragaudit.documents.options import DocumentOptions
    from ragaudit.llm.cache import LLMCache
    from ragaudit.llm.types import RawCompletion
    from ragaudit.rundir import RunDir
    from ragaudit.steps.dry_run import PAIR_COST, dry_run_generate

    config = Config.model_validate({"llm": {"model": "openai:gpt-4o-mini"}})
    run = RunDir(tmp_path / "run")
    sql = dry_run_generate(config, run)
    assert sql.requests == 0 and sql.cost.usd == 0  # the SQL half asks no LLM
    options = DocumentOptions(size=10)
    first = dry_run_generate(config, run, options)
    calls, tokens = PAIR_COST[options.strategy]
    assert first.requests == round(calls * 10 + 0.5) and first.lines[0].tokens_from.startswith(
        "estimated"
    )
    assert first.prompt_tokens + first.completion_tokens == pytest.approx(tokens * 10, abs=2)
    assert not run.root.exists()  # nothing written
    # The same generation done before, its replies in the cache: a rerun asks nothing.
    run.root.mkdir(parents=True)
    stats = {"calls": 3, "calls_per_pair": 0.3, "tokens_per_pair": 40.0}
    stats["options"] = options.model_dump(mode="json")
    run.documents_stats.write_text(json.dumps(stats))
    cache = LLMCache(run.llm_cache)
    for i in range(3):
        payload = {"backend": "openai", "model": "gpt-4o-mini", "messages": [], "params": {}}
        cache.put(f"k{i}", payload, RawCompletion(text="x", prompt_tokens=8, completion_tokens=2))
    cache.close()
    again = dry_run_generate(config, run, options)
    assert (again.requests, again.cached) == (0, 3)
    # Other options: priced from the last generation's measured requests per pair.
    other = dry_run_generate(config, run, DocumentOptions(size=20))
    line = other.lines[0]
    assert line.requests == 6 and line.tokens_from.startswith("measured")
    assert (line.prompt_tokens, line.completion_tokens) == (640, 160)  # the cache's 8:2 split


def test_the_cost_per_accepted_pair_and_per_verified_wording_divides_the_steps_cost(
    tmp_path: Path,
) -> None:
    import ragaudit as ra
    from ragaudit.generate.text.templates import (
        Verdict,
        load_text_templates,
        save_text_templates,
    )
    from ragaudit.rundir import RunDir
    from ragaudit.steps.cost import cost_figures

    project = ra.Project.example(root=tmp_path, progress="none")
    project.templates_sql()
    project.templates_text(verify=False)
    run = RunDir(project.run_dir)
    loaded = load_text_templates(run.templates_text)
    keys = [
        (tid, style, text)
        for tid, styles in loaded.templates.items()
        for style, texts in styles.items()
        for text in texts
    ]
    verdicts = {key: Verdict(verified=i % 3 != 0) for i, key in enumerate(keys)}
    save_text_templates(run.templates_text, loaded.templates, verdicts)
    verified = sum(v.verified for v in verdicts.values())
    prices = {"scripted:w": ModelPrice(input=1.0, output=3.0)}
    meter = UsageMeter(prices)
    with meter.step("verify"):
        meter.record_call(prompt_tokens=7000, completion_tokens=300, seconds=0, model="scripted:w")
    with meter.step("generate-documents"):
        meter.record_call(prompt_tokens=9000, completion_tokens=1000, seconds=0, model="local")
        meter.record_call(prompt_tokens=2000, completion_tokens=500, seconds=0, model="scripted:w")
    meter.write(run.usage)
    run.documents_stats.write_text(json.dumps({"accepted": 4}), encoding="utf-8")
    figures = cost_figures(run)
    assert figures is not None
    wording, pair = figures.per_verified_wording, figures.per_document_pair
    assert wording is not None and pair is not None
    verify_cost = (7000 * 1 + 300 * 3) / Decimal(MILLION)
    assert wording.units == verified and _usd(wording.cost.usd) == verify_cost
    assert _usd(wording.each.usd) == (verify_cost / verified).quantize(Decimal("1e-10"))
    pair_cost = (2000 * 1 + 500 * 3) / Decimal(MILLION)  # the embedded model's part is 0
    assert pair.units == 4 and _usd(pair.cost.usd) == pair_cost
    assert _usd(pair.each.usd) == pair_cost / 4
    assert pair.cost.note == EMBEDDED_NOTE
    assert _usd(figures.total.usd) == verify_cost + pair_cost
