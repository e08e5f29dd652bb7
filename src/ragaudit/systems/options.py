"""The ``systems:`` entries of ragaudit.yaml: one options class per kind, told apart by
``kind`` (``builtin`` when it is left out). Each kind's options live in its own module."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Discriminator, Tag

from ragaudit.systems.adapters.function import CallableSystemConfig
from ragaudit.systems.adapters.http_endpoint import HTTPSystemConfig
from ragaudit.systems.adapters.langchain import LangChainSystemConfig
from ragaudit.systems.adapters.llamaindex import LlamaIndexSystemConfig
from ragaudit.systems.base import SystemOptions
from ragaudit.systems.builtin import BuiltinSystemConfig

KINDS: dict[str, type[SystemOptions]] = {
    "builtin": BuiltinSystemConfig,
    "http": HTTPSystemConfig,
    "callable": CallableSystemConfig,
    "langchain": LangChainSystemConfig,
    "llamaindex": LlamaIndexSystemConfig,
}


def _kind(value: Any) -> str:
    """The kind of a ``systems:`` entry, raw or validated; ``builtin`` when unsaid."""
    if isinstance(value, dict):
        return str(value.get("kind", "builtin"))
    return str(getattr(value, "kind", "builtin"))


SystemConfig = Annotated[
    Annotated[BuiltinSystemConfig, Tag("builtin")]
    | Annotated[HTTPSystemConfig, Tag("http")]
    | Annotated[CallableSystemConfig, Tag("callable")]
    | Annotated[LangChainSystemConfig, Tag("langchain")]
    | Annotated[LlamaIndexSystemConfig, Tag("llamaindex")],
    Discriminator(
        _kind,
        custom_error_type="unknown_kind",
        custom_error_message="kind must be one of " + ", ".join(KINDS),
    ),
]
"""One system under test: a built-in RAG pipeline or an adapter to the user's own."""


def parse_system(data: Any) -> SystemOptions:
    """One ``systems:`` entry validated as its kind's options (for building a system from
    Python, as ragaudit.yaml's loader does for the file)."""
    from pydantic import TypeAdapter

    result: SystemOptions = TypeAdapter(SystemConfig).validate_python(data)
    return result
