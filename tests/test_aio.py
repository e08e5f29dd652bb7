"""gather_all: the first failure stops the others, so no task outlives its event loop."""

from __future__ import annotations

import asyncio
import time

import pytest

from ragaudit import aio


def test_first_failure_cancels_the_rest_and_is_raised() -> None:
    finished: list[str] = []
    cancelled: list[str] = []

    async def slow(name: str) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(name)
            raise
        finished.append(name)
        return name

    async def broken() -> str:
        await asyncio.sleep(0.01)
        raise ValueError("the one error that matters")

    start = time.perf_counter()
    with pytest.raises(ValueError, match="the one error that matters"):
        aio.run(aio.gather_all(slow("a"), broken(), slow("b")))
    assert time.perf_counter() - start < 5
    assert sorted(cancelled) == ["a", "b"] and not finished


def test_results_keep_their_order() -> None:
    async def after(delay: float, value: int) -> int:
        await asyncio.sleep(delay)
        return value

    assert aio.run(aio.gather_all(after(0.03, 1), after(0.0, 2), after(0.01, 3))) == [1, 2, 3]
