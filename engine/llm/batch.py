"""Run a batch of chat calls with bounded concurrency, from synchronous code.

:func:`run_batch` starts its own event loop (in a helper thread if the calling thread
already runs one), so it is safe to call from a GUI worker thread or the CLI. Each item's
outcome is reported through ``on_result`` in the thread that owns that loop as soon as
it is known, which lets the cache persist results while the batch is still running.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from engine.errors import Cancelled
from engine.llm.base import ChatRequest, Failure, Outcome, ResultCallback
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress

T = TypeVar("T")

#: How often a running batch checks its cancel token (seconds).
CANCEL_POLL_S = 0.05


def run_coroutine(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``factory()`` to completion in a fresh event loop and return its result.

    Uses the calling thread unless it already runs an event loop; then a helper thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(factory())
        except BaseException as exc:  # re-raised in the caller
            box["error"] = exc

    thread = threading.Thread(target=target, name="llm-batch", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def gather_bounded(
    requests: Sequence[ChatRequest],
    call: Callable[[ChatRequest], Awaitable[Outcome]],
    *,
    concurrency: int,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
    on_result: ResultCallback | None = None,
    on_crash: Callable[[BaseException], Failure],
    lead_s: float = 0.0,
) -> list[Outcome]:
    """Await ``call(request)`` for every request, at most ``concurrency`` at a time.

    Parameters
    ----------
    call
        Returns a :class:`~engine.llm.base.ChatResult` or a :class:`~engine.llm.base.Failure`
        (it handles its own retries).
    on_crash
        Turns an unexpected exception from ``call`` into a :class:`Failure`, so one item
        never fails the batch.
    lead_s
        When > 0, the first request goes out alone; the others wait until it has finished
        or ``lead_s`` seconds have passed (then ``cancel`` is checked again before each is
        sent), so a refused key or a wrong address costs one request, not ``concurrency``.

    Raises
    ------
    Cancelled
        When ``cancel`` is set; items finished before were reported through ``on_result``.
    """
    token = ensure_token(cancel)
    total = len(requests)
    results: list[Outcome | None] = [None] * total
    semaphore = asyncio.Semaphore(concurrency)
    finished = 0
    lead_done = asyncio.Event()
    if lead_s <= 0:
        lead_done.set()

    async def one(index: int, request: ChatRequest) -> None:
        if index > 0 and not lead_done.is_set():
            try:
                await asyncio.wait_for(lead_done.wait(), lead_s)
            except asyncio.TimeoutError:
                pass
        try:
            await run_one(index, request)
        finally:
            if index == 0:
                lead_done.set()

    async def run_one(index: int, request: ChatRequest) -> None:
        nonlocal finished
        async with semaphore:
            if token.cancelled:
                return
            try:
                outcome = await call(request)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a bug or an unmapped library error: fail this item only
                outcome = on_crash(exc)
        results[index] = outcome
        finished += 1
        if on_result is not None:
            on_result(index, outcome)
        progress(finished / total, f"{finished}/{total} LLM calls")

    tasks = [asyncio.ensure_future(one(i, r)) for i, r in enumerate(requests)]
    pending: set[asyncio.Future] = set(tasks)
    try:
        while pending:
            done, pending = await asyncio.wait(pending, timeout=CANCEL_POLL_S)
            for task in done:
                task.result()  # an exception from on_result/progress stops the batch
            if token.cancelled:
                break
    finally:
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    if token.cancelled and any(r is None for r in results):
        raise Cancelled("cancelled by the user")
    return [r for r in results if r is not None]
