"""A scripted LLM for users' own tests (``ra.llm.Scripted``): replies given in advance, or
computed from the request by a function of the user's, with no model and no network.

It is a backend like the others, so everything ragaudit does with a reply (the checks of
every LLM output, re-asking a malformed one, counting failures) happens to its replies
too: a test can script a broken reply and see ragaudit refuse it. It exists only in the
Python process that made it, so its calls are never cached in the run (a scripted reply
changes from one test to the next) and the command line cannot continue with it.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Iterable

from ragaudit.errors import LLMError
from ragaudit.llm.types import GenerationParams, Message, Messages, RawCompletion

# A reply: its text, or an exception the call raises instead (a scripted failure).
Reply = str | Exception
Responder = Callable[[Messages], Reply | Awaitable[Reply]]


class Scripted:
    """Replies from ``replies``, in order; then from ``responder(messages)``; then
    ``default``; a request with none of them left fails with an LLM error.

    Examples:
        >>> import asyncio
        >>> llm = Scripted(["first"], default="again")
        >>> for question in ("a?", "b?"):
        ...     ask = llm.acomplete([{"role": "user", "content": question}], GenerationParams())
        ...     print(asyncio.run(ask).text)
        first
        again
        >>> len(llm.requests)
        2
    """

    kind = "scripted"

    def __init__(
        self,
        replies: Iterable[Reply] | None = None,
        *,
        responder: Responder | None = None,
        default: str | None = None,
        name: str = "scripted",
        max_concurrency: int = 4,
    ) -> None:
        if not name or ":" in name:
            raise ValueError(f"Scripted: name {name!r} must be non-empty, without ':'")
        self.model = name
        self.max_concurrency = max_concurrency
        self.replies: deque[Reply] = deque(replies or [])
        self.responder = responder
        self.default = default
        self.requests: list[list[Message]] = []

    @property
    def spec(self) -> str:
        """How the configuration names it: ``scripted:<name>``."""
        return f"scripted:{self.model}"

    def describe(self) -> str:
        """Where calls go."""
        return f"the scripted LLM {self.model!r}"

    async def acomplete(self, messages: Messages, params: GenerationParams) -> RawCompletion:
        """The next scripted reply to this request (recorded in :attr:`requests`)."""
        self.requests.append(list(messages))
        reply: Reply | None
        if self.replies:
            reply = self.replies.popleft()
        elif self.responder is not None:
            value = self.responder(messages)
            reply = await value if inspect.isawaitable(value) else value
        else:
            reply = self.default
        if reply is None:
            raise LLMError(
                f"{self.describe()} has no reply left for request {len(self.requests)} "
                "(give more replies, a responder or a default)"
            )
        if isinstance(reply, Exception):
            raise reply if isinstance(reply, LLMError) else LLMError(str(reply))
        prompt = sum(len(m["content"].split()) for m in messages)
        return RawCompletion(
            text=str(reply), prompt_tokens=prompt, completion_tokens=len(str(reply).split())
        )

    async def aclose(self) -> None:
        """Nothing to release."""
