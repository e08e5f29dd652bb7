"""Issue 14's new-user trial, replayed: a LlamaIndex retriever of the user's own over the
reference Aurp reports, through the documented adapter, retrieval only.

For the same responses the headline retrieval accuracy used to read 0.00 (``same_set``
with k = 5), 0.29 or an inflated 0.97 (a gold-id rule naming a column that does not exist
gave every query ``[]``, counted as a hit). Each silent case now errors or warns, and the
default rule's headline figure is the top-k recall computed here independently from the
response files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import ragaudit, without_progress

pytest.importorskip("llama_index.retrievers.bm25", reason="needs ragaudit[dev] (LlamaIndex BM25)")

# The user's module: documents loaded the LlamaIndex way, split into chunks, a BM25
# retriever. `without_ids` is what the user first wrote (no metadata["id"]: nodes are
# named by random UUIDs); `with_ids` names each document as the corpus does; `fixed_depth`
# is a retriever whose depth cannot be set from outside.
USER_MODULE = """
import json
from llama_index.core import Document
from llama_index.core.node_parser import SentenceSplitter
from llama_index.retrievers.bm25 import BM25Retriever

REPORTS = json.load(open({documents!r}, encoding="utf-8"))


def _retriever(key):
    documents = [Document(text=text, metadata={{key: name}}) for name, text in REPORTS.items()]
    nodes = SentenceSplitter(chunk_size=256).get_nodes_from_documents(documents)
    return BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=2)


def without_ids():
    return _retriever("title")


def with_ids():
    return _retriever("id")


class FixedDepth:
    async def aretrieve(self, query):
        return []


def fixed_depth():
    return FixedDepth()
"""

CONFIG = """
database: {{url: "sqlite:///{db}"}}
corpus: {{path: "{documents}"}}
generate:
  unverified: true            # the paper's wordings, imported as they are
  gold_ids: [{{placeholder: {placeholder}}}]
systems:
  - {{name: no-ids, kind: llamaindex, target: "aurp_user_rag:without_ids", k: 5}}
  - {{name: with-ids, kind: llamaindex, target: "aurp_user_rag:with_ids", k: 5}}
"""


def _config(work: Path, aurp: Path, placeholder: str, extra: str = "") -> None:
    (work / "ragaudit.yaml").write_text(
        CONFIG.format(
            db=aurp / "aurp.sqlite", documents=aurp / "documents.json", placeholder=placeholder
        )
        + extra
    )


def _ok(result: Any) -> Any:
    assert result.returncode == 0, result.stderr
    return result


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def trial(grammar_reference: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    aurp = grammar_reference / "aurp"
    work = tmp_path_factory.mktemp("llamaindex-trial")
    (work / "aurp_user_rag.py").write_text(
        USER_MODULE.format(documents=str(aurp / "documents.json"))
    )
    _config(work, aurp, "Project.Title")
    _ok(
        ragaudit("templates", "sql", "--from-reference", str(aurp / "sql_templates.json"), cwd=work)
    )
    _ok(
        ragaudit(
            "templates", "text", "--no-verify",
            "--from-reference", f"short={aurp / 'text_templates_short.json'}",
            "--from-reference", f"long={aurp / 'text_templates_long.json'}",
            cwd=work,
        )
    )  # fmt: skip
    wrong_rule = ragaudit("generate", cwd=work)
    _config(work, aurp, "Project.Name")
    generated = _ok(ragaudit("generate", cwd=work))
    ran = _ok(ragaudit("run", cwd=work, timeout=600))
    analyzed = _ok(ragaudit("analyze", "--outcome", "retrieval", cwd=work))
    root = work / "runs" / "default"
    return {
        "work": work,
        "aurp": aurp,
        "root": root,
        "wrong_rule": wrong_rule,
        "generated": generated,
        "ran": ran,
        "analyzed": analyzed,
        "summary": json.loads((root / "summary.json").read_text()),
        "dataset": _lines(root / "dataset.jsonl"),
    }


def test_a_gold_rule_naming_a_missing_column_is_an_error(trial: dict[str, Any]) -> None:
    """It used to give every query [] ("no document holds the answer") and recall 1.00."""
    result = trial["wrong_rule"]
    assert result.returncode == 2
    assert without_progress(result.stderr).strip().splitlines() == [
        "error: generate.gold_ids[0]: Project has no column Title (columns: Name, Location, "
        "StartDate, EndDate, Client, ProjectDirector, ProjectManager)"
    ]


def test_unknown_gold_ids_are_null_and_counted_and_missing_documents_reported(
    trial: dict[str, Any],
) -> None:
    """Client and employee questions have no placeholder the rule names: their gold ids
    are unknown (null), not "no document" ([]). The project without a report is named."""
    dataset = trial["dataset"]
    by_gold = {
        "unknown": [q for q in dataset if q["gold_ids"] is None],
        "named": [q for q in dataset if q["gold_ids"]],
        "empty": [q for q in dataset if q["gold_ids"] == []],
    }
    assert not by_gold["empty"]
    assert {q["template_id"].split("-by-")[0] for q in by_gold["unknown"]} >= {"location"}
    assert all("Project.Name" in q["bindings"] for q in by_gold["named"])
    assert all("Project.Name" not in q["bindings"] for q in by_gold["unknown"])
    groups = {
        kind: len({q["group_id"] for q in qs}) for kind, qs in by_gold.items() if kind != "empty"
    }
    out = trial["generated"].stdout
    assert f"gold ids = documents about the entity (a rule) │ {groups['named']:>5}" in out
    assert f"gold ids unknown (no rule or fact applies)     │ {groups['unknown']:>5}" in out
    reports = set(json.loads((trial["aurp"] / "documents.json").read_text()))
    named = {d for q in by_gold["named"] for d in q["gold_ids"]}
    missing = named - reports
    pairs = sum(d in missing for q in by_gold["named"] for d in q["gold_ids"])
    warning = (
        f"warning: {len(missing)} of {len(named)} distinct gold ids name no document of the "
        f"corpus (e.g. {sorted(missing)[0]!r}), in {pairs} query-gold pairs"
    )
    assert missing and warning in trial["generated"].stderr


def test_retrieved_ids_that_match_no_document_are_reported(trial: dict[str, Any]) -> None:
    """Nodes without metadata["id"] are named by random UUIDs: retrieval would read 0.00
    with no explanation."""
    root = trial["root"]
    no_ids = _lines(root / "responses" / "no-ids.jsonl")
    items = sum(len(r["retrieved"]) for r in no_ids)
    distinct = len({i["id"] for r in no_ids for i in r["retrieved"]})
    warnings = [w for w in trial["ran"].stderr.splitlines() if w.startswith("warning:")]
    assert warnings == [
        f"warning: no-ids: {items} of {items} retrieved ids ({distinct} distinct, e.g. "
        + warnings[0].split("e.g. ", 1)[1]
    ]
    assert "metadata['id']" in warnings[0]
    assert json.loads((root / "run.stats.json").read_text())["with-ids"]["warnings"] == []


def test_k_is_passed_to_the_retriever_and_texts_are_not_stored(trial: dict[str, Any]) -> None:
    """The user's retriever defaults to 2 nodes; the system's k: 5 reached it. Responses
    keep ids and scores, not the passages (they are the corpus again, once per query)."""
    responses = _lines(trial["root"] / "responses" / "with-ids.jsonl")
    assert {len(r["retrieved"]) for r in responses} == {5}
    assert all(
        i["text"] is None and i["score"] is not None for r in responses for i in r["retrieved"]
    )
    corpus = (trial["aurp"] / "documents.json").stat().st_size
    size = (trial["root"] / "responses" / "with-ids.jsonl").stat().st_size
    assert size < 40 * corpus, (size, corpus)


def test_the_headline_figure_is_the_top_k_recall_over_the_same_queries(
    trial: dict[str, Any],
) -> None:
    """Under the default rule, accuracy_retrieval is the share of queries whose gold
    document is among the 5 retrieved, recomputed here from the files; the ranking table
    counts exactly the same queries; the queries left out are counted."""
    gold = {q["query_id"]: q for q in trial["dataset"]}
    responses = _lines(trial["root"] / "responses" / "with-ids.jsonl")
    summary = trial["summary"]
    assert summary["retrieval_rule"] == "all_gold" and summary["warnings"] == []
    for variant in ("short", "long"):
        hits, n, unknown = 0, 0, 0
        for r in responses:
            q = gold[r["query_id"]]
            if q["variant"] != variant:
                continue
            if q["gold_ids"] is None:
                unknown += 1
                continue
            n += 1
            hits += set(q["gold_ids"]) <= {i["id"] for i in r["retrieved"]}
        figures = summary["systems"]["with-ids"]["variants"][variant]
        headline = figures["accuracy_retrieval"]
        assert (headline["k"], headline["n"]) == (hits, n)
        assert 0.5 < hits / n < 0.97  # neither a silent zero nor an inflated near-perfect
        assert figures["retrieval_left_out"] == {"unknown": unknown}
        recall = summary["retrieval_ranking"]["with-ids"]["variants"][variant]["recall@5"]
        assert recall["n"] == n and recall["value"] == pytest.approx(hits / n)
        assert summary["systems"]["no-ids"]["variants"][variant]["accuracy_retrieval"]["k"] == 0
    assert "retrieval queries" in trial["analyzed"].stdout


def test_same_set_with_more_documents_than_gold_ids_is_warned(trial: dict[str, Any]) -> None:
    """The paper's rule is meant for top-1 retrieval: against one gold document, a top-5
    system can never be right, and the user is told so with counts."""
    result = _ok(
        ragaudit(
            "analyze", "--outcome", "retrieval", "--retrieval-rule", "same_set", cwd=trial["work"]
        )
    )
    gold = {q["query_id"]: q["gold_ids"] for q in trial["dataset"]}
    responses = _lines(trial["root"] / "responses" / "with-ids.jsonl")
    judged = [r for r in responses if gold[r["query_id"]]]
    wider = sum(len({i["id"] for i in r["retrieved"]}) > len(gold[r["query_id"]]) for r in judged)
    expected = (
        f"warning: retrieval rule same_set: with-ids: in {wider} of {len(judged)} queries more "
        "documents retrieved than the gold ids name, so retrieval could never be correct"
    )
    assert wider and expected in result.stderr
    summary = json.loads((trial["root"] / "summary.json").read_text())
    assert any(w.startswith(expected[len("warning: ") :]) for w in summary["warnings"])
    _ok(ragaudit("report", cwd=trial["work"]))
    html = (trial["root"] / "report.html").read_text()
    assert f'<p class="warning">Warning: {expected[len("warning: ") :]}' in html


def test_k_that_a_system_cannot_take_is_an_error(trial: dict[str, Any]) -> None:
    """Never ignored: a retriever without a depth to set refuses k, in one line."""
    work = trial["work"]
    config = work / "ragaudit.yaml"
    saved = config.read_text()
    try:
        config.write_text(
            saved
            + '  - {name: fixed, kind: llamaindex, target: "aurp_user_rag:fixed_depth", k: 5}\n'
        )
        result = ragaudit("run", "--system", "fixed", cwd=work)
    finally:
        config.write_text(saved)
    assert result.returncode == 2
    assert without_progress(result.stderr).strip().splitlines() == [
        "error: system fixed: k is set, but FixedDepth has no similarity_top_k to set; remove "
        "k and set the depth in the system itself, or make it accept one"
    ]
    assert not (trial["root"] / "responses" / "fixed.jsonl").exists()


def test_a_row_to_document_map_gives_gold_ids_that_state_the_answer(
    trial: dict[str, Any], tmp_path: Path
) -> None:
    """What a user has beside their documents: which row each report is about. ragaudit
    checks which cells each report states, so gold ids name the reports that state the
    answer, [] where the report about the row does not state it, and null where no report
    is about the row (client and employee questions: never checked); the retrieval
    figures count the same queries, the others left out and counted."""
    aurp: Path = trial["aurp"]
    labelled = json.loads((aurp / "document_row_map.json").read_text())["documents"]
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"id": doc, "table": entry["table"], "row_key": entry["row_key"]}) + "\n"
            for doc, entry in labelled.items()
        )
    )
    (tmp_path / "aurp_user_rag.py").write_text((trial["work"] / "aurp_user_rag.py").read_text())
    templates = tmp_path / "runs" / "default" / "templates"
    templates.mkdir(parents=True)
    for name in ("sql.yaml", "text.yaml"):
        (templates / name).write_text((trial["root"] / "templates" / name).read_text())
    _config(tmp_path, aurp, "Project.Name")
    config = tmp_path / "ragaudit.yaml"
    config.write_text(
        config.read_text().replace(
            "  gold_ids: [{placeholder: Project.Name}]", f"  gold_rows: {json.dumps(str(rows))}"
        )
    )
    generated = _ok(ragaudit("generate", cwd=tmp_path))
    root = tmp_path / "runs" / "default"
    # The derived facts are the labelled ones (the check agrees with every label on Aurp).
    written = _lines(root / "gold_facts.jsonl")
    derived = {(r["id"], f["column"]) for r in written for f in r["facts"]}
    assert {r["id"]: r["rows"] for r in written} == {
        doc: [{"table": "Project", "row_key": entry["row_key"]}] for doc, entry in labelled.items()
    }
    expected = {
        (doc, column)
        for doc, entry in labelled.items()
        for column, form in entry["value_found_verbatim"].items()
        if form is not None
    }
    assert derived == expected
    shown = (
        rf"cells stated in their document \(of {len(expected) + 5} checked\) +│ +{len(expected)} │"
    )
    assert re.search(shown, generated.stdout), generated.stdout
    dataset = _lines(root / "dataset.jsonl")
    for q in dataset:
        project = q["bindings"].get("Project.Name")
        if project is None or project not in labelled:  # no report is about this row
            assert (q["gold_ids"], q["gold_kind"]) == (None, None)
        else:
            column = q["template_id"].split("-by-")[0]
            stated = {doc for doc, col in expected if col.lower() == column.lower()}
            assert q["gold_ids"] == ([project] if project in stated else [])
            assert q["gold_kind"] == "states"
    assert any(q["gold_ids"] == [] for q in dataset)  # Dubai's report never names itself
    _ok(ragaudit("run", "--system", "with-ids", cwd=tmp_path))
    _ok(ragaudit("analyze", "--outcome", "retrieval", cwd=tmp_path))
    summary = json.loads((root / "summary.json").read_text())
    for variant in ("short", "long"):
        asked = [q for q in dataset if q["variant"] == variant]
        holes = sum(q["gold_ids"] == [] for q in asked)
        unknown = sum(q["gold_ids"] is None for q in asked)
        figures = summary["systems"]["with-ids"]["variants"][variant]
        assert figures["retrieval_left_out"] == {"no document": holes, "unknown": unknown}
        n = len(asked) - holes - unknown
        assert figures["accuracy_retrieval"]["n"] == n
        ranked = summary["retrieval_ranking"]["with-ids"]["variants"][variant]["recall@5"]
        assert ranked["n"] == n
        assert ranked["value"] == pytest.approx(figures["accuracy_retrieval"]["value"])
