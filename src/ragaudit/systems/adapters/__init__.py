"""Adapters to the user's own RAG system, whatever it is built with, one module each:

* :mod:`~ragaudit.systems.adapters.http_endpoint`: a JSON endpoint over HTTP.
* :mod:`~ragaudit.systems.adapters.function`: a Python function, sync or async.
* :mod:`~ragaudit.systems.adapters.langchain`: a LangChain retriever or chain.
* :mod:`~ragaudit.systems.adapters.llamaindex`: a LlamaIndex retriever or query engine.

Each module holds its ``kind``'s options and builds its system from them. An adapter raises
on failure; the harness records the message on the query's record and goes on.
"""

from ragaudit.systems.adapters.common import expand_env, load_target, to_answer
from ragaudit.systems.adapters.function import CallableSystem, CallableSystemConfig
from ragaudit.systems.adapters.http_endpoint import HTTPSystem, HTTPSystemConfig, fill_template
from ragaudit.systems.adapters.langchain import LangChainSystem, LangChainSystemConfig
from ragaudit.systems.adapters.llamaindex import LlamaIndexSystem, LlamaIndexSystemConfig

__all__ = [
    "CallableSystem",
    "CallableSystemConfig",
    "HTTPSystem",
    "HTTPSystemConfig",
    "LangChainSystem",
    "LangChainSystemConfig",
    "LlamaIndexSystem",
    "LlamaIndexSystemConfig",
    "expand_env",
    "fill_template",
    "load_target",
    "to_answer",
]
