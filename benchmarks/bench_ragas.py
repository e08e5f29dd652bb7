"""ragaudit's ``statements`` generation and Ragas's test-set generator, side by side: the
same contexts (SQuAD 2.0 paragraphs of 110 to 300 words, which Ragas's default transforms
accept), the same embedded model behind one OpenAI-compatible server on loopback that
counts every request and token per tool, both with empty caches.

Reported per tool: pairs asked for and produced, LLM requests, tokens and wall seconds per
produced pair, duplicate questions (cosine of all-MiniLM-L6-v2 embeddings at 0.9 or more),
references whose content words are all in their context, and the label composition by
ragaudit's labeller (for ragaudit, the label it recorded while checking each pair; for
Ragas, asked afterwards through the same server, not counted against either). Ragas's own
query types are listed too.

Run with ``make bench-ragas``, which builds the Ragas environment (.venv-ragas) first.
Needs ../shared/reference/squad2-subset; without it, it says so and exits 0.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

SQUAD = ROOT.parent / "shared" / "reference" / "squad2-subset" / "dev-v2.0-subset.json"
RAGAS_PYTHON = ROOT / ".venv-ragas" / "bin" / "python"
CONTEXTS = 8
SIZE = 8
DUPLICATE = 0.9


def contexts(n: int = CONTEXTS) -> list[dict[str, str]]:
    """The first ``n`` SQuAD paragraphs of 110 to 300 words, from both articles in turn."""
    data = json.loads(SQUAD.read_text(encoding="utf-8"))
    per_article = [
        [
            {"id": f"{a['title']}#{i}", "text": p["context"]}
            for i, p in enumerate(a["paragraphs"])
            if 110 <= len(p["context"].split()) <= 300
        ]
        for a in data["data"]
    ]
    mixed = [c for pair in zip(*per_article, strict=False) for c in pair]
    return mixed[:n]


def _ragaudit(folder: Path, base_url: str, size: int) -> dict[str, Any]:
    """``ragaudit generate --documents`` (statements, uniform mix, no wordings)."""
    from ragaudit.records import read_jsonl
    from ragaudit.records.models import CandidateRecord

    (folder / "ragaudit.yaml").write_text(
        "llm:\n  model: openai:local\n  max_tokens: 1024\n"
        "corpus:\n  path: docs.jsonl\n"
        "generate:\n  documents:\n    strategy: statements\n    mix: uniform\n    rounds: 2\n"
        "    styles: []\n"
    )
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-local-bench"}
    start = time.perf_counter()
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "ragaudit"),
            "generate",
            "--documents",
            "--size",
            str(size),
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    run = folder / "runs" / "default"
    candidates = list(read_jsonl(run / "candidates.jsonl", CandidateRecord))
    accepted = [c for c in candidates if c.accepted]
    return {
        "seconds": seconds,
        "exit": done.returncode,
        "error": done.stderr.strip().splitlines()[-1] if done.returncode else None,
        "pairs": [
            {
                "question": c.question,
                "reference": c.answer or "",
                "context": c.gold_ids[0],
                "label": c.observed_label,
                "type": c.requested_label,
            }
            for c in accepted
        ],
        "candidates": len(candidates),
        "dropped": dict(Counter(str(c.dropped).split(":", 1)[0] for c in candidates if c.dropped)),
    }


def _ragas(folder: Path, base_url: str, size: int, docs: list[dict[str, str]]) -> dict[str, Any]:
    """Ragas's generator in its own environment."""
    (folder / "contexts.json").write_text(json.dumps(docs))
    out = folder / "ragas.json"
    start = time.perf_counter()
    done = subprocess.run(
        [
            str(RAGAS_PYTHON),
            str(HERE / "ragas_testset.py"),
            str(folder / "contexts.json"),
            str(size),
            base_url,
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    if not out.exists():
        return {"seconds": seconds, "error": done.stderr.strip()[-1000:], "pairs": []}
    result = json.loads(out.read_text())
    texts = {d["text"].strip(): d["id"] for d in docs}
    pairs = [
        {
            "question": s["question"],
            "reference": s["reference"] or "",
            "context": next((texts[c.strip()] for c in s["contexts"] if c.strip() in texts), None),
            "contexts": s["contexts"],
            "type": s["synthesizer"],
        }
        for s in result["samples"]
    ]
    return {"seconds": seconds, "error": result.get("error"), "pairs": pairs}


def _label(base_url: str, pairs: list[dict[str, Any]], docs: dict[str, str]) -> None:
    """ragaudit's labeller on Ragas's pairs, through the server (client "labels")."""
    from ragaudit.config import LLMConfig
    from ragaudit.documents.labels import Rater, label_one
    from ragaudit.documents.options import DocumentOptions
    from ragaudit.llm import make_llm
    from ragaudit.records.models import LabelPair

    async def every(llm: Any) -> None:
        # Asked as the generator asks, so both tools' pairs are labelled alike.
        rater = Rater("local", DocumentOptions().label_phrasing)
        for i, p in enumerate(pairs):
            context = "\n\n".join(p.get("contexts") or [docs.get(p["context"] or "", "")])
            pair = LabelPair(
                pair_id=f"ragas-{i}",
                gold_ids=[p["context"] or "multi"],
                question=p["question"],
                answer=p["reference"],
            )
            labelled = await label_one(llm, rater, pair, context)
            p["label"] = labelled.label

    config = LLMConfig(model="openai:local", base_url=base_url, api_key="sk-local-bench")
    with make_llm(config) as llm:
        asyncio.run(every(llm))


def _checks(pairs: list[dict[str, Any]], docs: dict[str, str]) -> dict[str, Any]:
    """Duplicates among the questions, and references the lookup finds in their context."""
    import numpy as np

    from ragaudit.documents.checks import answer_support
    from ragaudit.systems.retrievers import embed

    questions = [p["question"] for p in pairs]
    duplicates = 0
    if len(questions) > 1:
        vectors = np.asarray(embed(questions))
        sims = vectors @ vectors.T
        duplicates = int(sum((sims[i, :i] >= DUPLICATE).any() for i in range(1, len(questions))))
    support: Counter[str] = Counter()
    for p in pairs:
        context = "\n\n".join(p.get("contexts") or [docs.get(p["context"] or "", "")])
        decided, _ = answer_support(context, p["reference"])
        support[decided or "undecided"] += 1
    return {
        "exact_duplicates": len(questions) - len({q.strip().lower() for q in questions}),
        "near_duplicates": duplicates,
        "reference_support": dict(support),
        "labels": dict(Counter(str(p.get("label")) for p in pairs)),
        "types": dict(Counter(str(p.get("type")) for p in pairs)),
    }


def run() -> dict[str, Any]:
    """Both tools on the same contexts and model; figures per produced pair, and ratios."""
    if not SQUAD.is_file():
        return {"skipped": f"the SQuAD reference subset is not at {SQUAD.parent}"}
    if not RAGAS_PYTHON.exists():
        return {"skipped": "no Ragas environment: run make bench-ragas"}
    from benchmarks.model_server import ModelServer
    from ragaudit.analysis.documents import composition_distance

    docs = contexts()
    by_id = {d["id"]: d["text"] for d in docs}
    out: dict[str, Any] = {"contexts": len(docs), "size": SIZE}
    with tempfile.TemporaryDirectory() as tmp, ModelServer() as server:
        folder = Path(tmp)
        (folder / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
        tools = {
            "ragaudit": _ragaudit(folder, f"{server.base_url}/ragaudit/v1", SIZE),
            "ragas": _ragas(folder, f"{server.base_url}/ragas/v1", SIZE, docs),
        }
        _label(f"{server.base_url}/labels/v1", tools["ragas"]["pairs"], by_id)
        for name, result in tools.items():
            usage = server.usage(name)
            n = len(result["pairs"])
            tokens = usage["prompt_tokens"] + usage["completion_tokens"]
            labels = [str(p.get("label")) for p in result["pairs"] if p.get("label")]
            out[name] = {
                "pairs": n,
                "requests": usage["requests"],
                "tokens": tokens,
                "seconds": round(result["seconds"], 1),
                "requests_per_pair": round(usage["requests"] / n, 2) if n else None,
                "tokens_per_pair": round(tokens / n) if n else None,
                "seconds_per_pair": round(result["seconds"] / n, 1) if n else None,
                "label_distance_to_uniform": str(composition_distance(labels)),
                "error": result.get("error"),
                **_checks(result["pairs"], by_id),
                **{k: result[k] for k in ("candidates", "dropped") if k in result},
            }
        out["examples"] = {
            name: [
                {k: p[k] for k in ("question", "reference", "type", "label") if k in p}
                for p in result["pairs"][:3]
            ]
            for name, result in tools.items()
        }
    a, b = out["ragaudit"], out["ragas"]
    for key in ("requests_per_pair", "tokens_per_pair", "seconds_per_pair"):
        if a[key] and b[key]:
            out[f"ragaudit_over_ragas_{key}"] = round(a[key] / b[key], 2)
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
