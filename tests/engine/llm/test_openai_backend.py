"""The ``openai`` backend against real loopback servers: llama.cpp serving SmolLM2, and fault servers."""

from __future__ import annotations

import logging
import socket
import threading
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from engine.errors import Cancelled
from engine.llm.base import ChatBackend, ChatRequest, ChatResult, Failure
from engine.llm.config import LLMConfig
from engine.llm.errors import (
    BadResponseError,
    EndpointUnreachableError,
    LLMAuthError,
    LLMTimeoutError,
    ModelNotFoundError,
    RateLimitedError,
    ServerError,
)
from engine.llm.registry import create_backend
from engine.progress import CancelToken
from tests.engine.llm.conftest import SMOL, item_number, require_smollm2

def openai_config(base_url: str, **kwargs) -> LLMConfig:
    return LLMConfig(backend="openai", model=kwargs.pop("model", "stub"), base_url=base_url, **kwargs)


def items(n: int, start: int = 0) -> list[ChatRequest]:
    return [ChatRequest([{"role": "user", "content": f"item {i}"}]) for i in range(start, start + n)]


# ---------------------------------------------------------------------------- real server


def test_real_server_chat_and_batch(smol_server):
    backend = create_backend(openai_config(smol_server.base_url, model=SMOL, params={"max_tokens": 8, "temperature": 0, "seed": 1}))
    assert isinstance(backend, ChatBackend)
    one = backend.chat([{"role": "user", "content": "Name a colour."}])
    assert isinstance(one, ChatResult) and one.text.strip()
    assert one.usage.prompt_tokens > 0 and 0 < one.usage.completion_tokens <= 8
    assert one.finish_reason in ("stop", "length")
    seen = []
    out = backend.chat_many(
        [ChatRequest([{"role": "user", "content": w}]) for w in ("Hello", "Name a fruit.", "Hello")],
        on_result=lambda i, r: seen.append(i),
        progress=lambda f, m="": None,
    )
    assert [type(r) for r in out] == [ChatResult] * 3
    assert out[0].text == out[2].text  # temperature 0, same seed: deterministic
    assert sorted(seen) == [0, 1, 2]
    assert SMOL in backend.list_models()


def test_real_server_rejects_a_wrong_key(tmp_path, monkeypatch):
    from engine.llm.server import start_local_server

    require_smollm2()
    monkeypatch.setenv("CB_SERVER_KEY", "sk-right-key-0123456789")
    with start_local_server(SMOL, 0, n_threads=1, n_ctx=512, api_key="sk-right-key-0123456789") as server:
        good = create_backend(openai_config(server.base_url, model=SMOL, api_key_env="CB_SERVER_KEY",
                                            params={"max_tokens": 2}))
        assert good.chat([{"role": "user", "content": "hi"}]).text is not None
        monkeypatch.setenv("CB_SERVER_KEY", "sk-wrong-key-9876543210")
        bad = create_backend(openai_config(server.base_url, model=SMOL, api_key_env="CB_SERVER_KEY"))
        with pytest.raises(LLMAuthError) as info:
            bad.chat([{"role": "user", "content": "hi"}])
        assert "9876543210" not in str(info.value) and "CB_SERVER_KEY" in info.value.hint


# ---------------------------------------------------------------------------- faults


def flaky_plan(body: dict, attempt: int) -> str:
    """Items 0..15 cycle through every fault on their first attempt, then answer."""
    n = item_number(body)
    fault = ["ok", "500", "429", "slow", "garbage", "bad_json", "truncated", "503"][n % 8]
    return fault if attempt == 1 else "ok"


def test_every_transient_fault_is_retried_until_the_batch_completes(stub):
    server = stub(flaky_plan, slow_s=3.0, retry_after="0.05")
    # timeouts leave room for a loaded 2-core CI machine: only the "slow" fault may exceed them
    backend = create_backend(openai_config(server.base_url, timeout_s=1.0, max_retries=3, concurrency=8))
    out = backend.chat_many(items(16))
    assert all(isinstance(r, ChatResult) for r in out)
    assert [r.text for r in out] == [f"item {i} | was | answered" for i in range(16)]
    assert server.count == 16 + 14  # each faulty item (14 of 16) was sent exactly twice
    assert max(server.attempts.values()) == 2


def test_permanent_faults_become_named_retriable_failures(stub):
    fault_of = {0: "ok", 1: "500", 2: "429", 3: "slow", 4: "garbage", 5: "truncated", 6: "404", 7: "bad_json"}
    server = stub(lambda body, attempt: fault_of[item_number(body)], slow_s=3.0, retry_after="0")
    backend = create_backend(openai_config(server.base_url, timeout_s=1.0, max_retries=2))
    out = backend.chat_many(items(8))
    assert isinstance(out[0], ChatResult)
    failures = {i: r for i, r in enumerate(out) if isinstance(r, Failure)}
    expected = {1: ServerError, 2: RateLimitedError, 3: LLMTimeoutError, 4: BadResponseError,
                5: BadResponseError, 6: ModelNotFoundError, 7: BadResponseError}
    assert {i: f.error for i, f in failures.items()} == {i: c.__name__ for i, c in expected.items()}
    for i, f in failures.items():
        assert f.hint and f.message
        assert f.retriable == (i != 6)
        assert f.attempts == (1 if i == 6 else 3)  # 404 is not retried; the rest 1 + 2 retries
    assert server.attempts  # and the 404 item was sent once only
    assert server.count == 1 + 6 * 3 + 1


def test_retry_after_is_waited_for(stub):
    server = stub(lambda body, attempt: "429" if attempt == 1 else "ok", retry_after="0.6")
    backend = create_backend(openai_config(server.base_url, max_retries=1))
    started = time.perf_counter()
    assert isinstance(backend.chat_many(items(1))[0], ChatResult)
    assert server.times[1] - server.times[0] >= 0.6
    assert time.perf_counter() - started < 30  # the 0.6 s it asked for, not the client's default waits


def test_max_retries_zero_sends_once(stub):
    server = stub(lambda body, attempt: "500")
    backend = create_backend(openai_config(server.base_url, max_retries=0))
    with pytest.raises(ServerError):
        backend.chat([{"role": "user", "content": "item 1"}])
    assert server.count == 1


def test_retry_after_in_milliseconds_and_as_a_date_is_waited_for(stub):
    server = stub(lambda body, attempt: "429" if attempt == 1 else "ok", retry_after="700",
                  retry_after_header="retry-after-ms")
    assert isinstance(create_backend(openai_config(server.base_url, max_retries=1)).chat_many(items(1))[0], ChatResult)
    assert server.times[1] - server.times[0] >= 0.7
    when = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=2), usegmt=True)
    server = stub(lambda body, attempt: "429" if attempt == 1 else "ok", retry_after=when)
    assert isinstance(create_backend(openai_config(server.base_url, max_retries=1)).chat_many(items(1))[0], ChatResult)
    assert 0.9 <= server.times[1] - server.times[0] < 3  # an HTTP date has whole seconds


def test_a_retry_after_beyond_two_minutes_fails_at_once_as_retriable(stub):
    server = stub(lambda body, attempt: "429", retry_after="600")
    started = time.perf_counter()
    [failure] = create_backend(openai_config(server.base_url, max_retries=3)).chat_many(items(1))
    assert failure.error == "RateLimitedError" and failure.retriable and failure.attempts == 1
    assert server.count == 1 and time.perf_counter() - started < 60  # not the 600 s asked for


def test_backoff_grows_between_retries_without_retry_after(stub):
    server = stub(lambda body, attempt: "500", retry_after="0")
    [failure] = create_backend(openai_config(server.base_url, max_retries=2)).chat_many(items(1))
    assert failure.error == "ServerError" and failure.attempts == 3 and server.count == 3
    first, second = (b - a for a, b in zip(server.times, server.times[1:]))
    assert 0.3 <= first < second < 2.5  # about 0.5 s, then about 1 s, each with jitter


def test_auth_and_other_client_errors_are_not_retried(stub):
    server = stub(lambda body, attempt: "401" if item_number(body) == 0 else "404")
    backend = create_backend(openai_config(server.base_url, max_retries=4))
    with pytest.raises(LLMAuthError):
        backend.chat([{"role": "user", "content": "item 0"}])
    with pytest.raises(ModelNotFoundError):
        backend.chat([{"role": "user", "content": "item 1"}])
    assert server.count == 2  # neither retried (so no backoff was waited for)


def test_garbled_answers_share_the_retry_budget_with_the_clients_retries(stub):
    plans = {0: ["500", "garbage", "ok"], 1: ["500", "garbage", "bad_json", "ok"], 2: ["garbage", "503", "ok"]}
    server = stub(lambda body, attempt: plans[item_number(body)][attempt - 1], retry_after="0.05")
    out = create_backend(openai_config(server.base_url, max_retries=2)).chat_many(items(3))
    assert isinstance(out[0], ChatResult) and isinstance(out[2], ChatResult)
    assert isinstance(out[1], Failure) and out[1].error == "BadResponseError" and out[1].attempts == 3
    assert server.count == 9  # 1 + max_retries requests per item, never more


def test_unreachable_endpoint_is_named(unused_port):
    backend = create_backend(openai_config(f"http://127.0.0.1:{unused_port}/v1", max_retries=1))
    with pytest.raises(EndpointUnreachableError) as info:
        backend.chat([{"role": "user", "content": "hi"}])
    assert "serve-llm" in info.value.hint
    [failure] = backend.chat_many(items(1))
    assert failure.error == "EndpointUnreachableError" and failure.retriable and failure.attempts == 2


def test_concurrency_is_bounded(stub):
    server = stub(latency=0.1)
    backend = create_backend(openai_config(server.base_url, concurrency=4))
    in_flight, peak, lock = [0], [0], threading.Lock()
    original = server._answer

    async def counting(*args):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        try:
            return await original(*args)
        finally:
            with lock:
                in_flight[0] -= 1

    server._answer = counting
    started = time.perf_counter()
    assert all(isinstance(r, ChatResult) for r in backend.chat_many(items(12)))
    assert peak[0] == 4
    assert time.perf_counter() - started >= 0.3  # 3 waves of 0.1 s (the peak of 4 says they overlapped)


def test_cancel_stops_the_batch_and_reports_finished_items(stub):
    server = stub(latency=0.05)
    backend = create_backend(openai_config(server.base_url, concurrency=2))
    token = CancelToken()
    done: list[int] = []

    def on_result(i, r):
        done.append(i)
        if len(done) == 3:
            token.cancel()

    with pytest.raises(Cancelled):
        backend.chat_many(items(40), cancel=token, on_result=on_result)
    assert 3 <= len(done) < 40
    assert server.count < 40


def test_runs_inside_a_thread_that_already_has_an_event_loop(stub):
    import asyncio

    server = stub()
    backend = create_backend(openai_config(server.base_url))

    async def inside():
        return backend.chat_many(items(2))

    assert len(asyncio.run(inside())) == 2


def test_api_key_never_shows(stub, monkeypatch, caplog):
    secret = "sk-live-SECRET0123456789abcdef"
    monkeypatch.setenv("CB_TEST_API_KEY", secret)
    caplog.set_level(logging.DEBUG)
    server = stub(lambda body, attempt: "401" if item_number(body) == 0 else ("500" if attempt == 1 else "ok"))
    cfg = openai_config(server.base_url, api_key_env="CB_TEST_API_KEY", max_retries=1)
    backend = create_backend(cfg)
    out = backend.chat_many(items(3))
    with pytest.raises(LLMAuthError) as info:
        backend.chat([{"role": "user", "content": "item 0"}])
    shown = [repr(backend), str(backend), repr(cfg), str(cfg.to_dict()), str(info.value), repr(info.value),
             info.value.hint, caplog.text, *(repr(r) for r in out), *(str(r.to_dict()) for r in out)]
    assert isinstance(out[0], Failure) and "invalid key" in out[0].message  # the server did echo it
    assert all(secret not in s and "SECRET0123" not in s for s in shown)
    assert "CB_TEST_API_KEY" in repr(backend)


@pytest.fixture
def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_request_without_a_token_limit_is_sent_capped_and_cached_as_given(stub):
    """No max_tokens anywhere: the server still gets FALLBACK_MAX_TOKENS (a repeating model cannot run on to the
    end of its context); the cache key stays the request as given, so stored answers are still found."""
    from contextlib import closing

    from engine.llm.base import FALLBACK_MAX_TOKENS
    from engine.llm.cache import cache_key

    seen: list[dict] = []
    server = stub(lambda body, attempt: seen.append(body) or "ok")
    with closing(create_backend(openai_config(server.base_url, params={"temperature": 0.0}))) as backend:
        hi = [{"role": "user", "content": "hi"}]
        backend.chat(hi)
        assert seen[-1]["max_tokens"] == FALLBACK_MAX_TOKENS
        backend.chat(hi, {"max_tokens": 7})
        assert seen[-1]["max_tokens"] == 7
        keyed = ChatRequest(hi).with_defaults(backend.params)
        assert "max_tokens" not in keyed.params
        assert cache_key("openai", "stub", keyed) == cache_key("openai", "stub", ChatRequest(hi, {"temperature": 0.0}))


# ---------------------------------------------------------------------------- where the time went


def test_a_real_llama_cpp_server_says_how_much_of_a_shared_prompt_it_took_from_its_cache(smol_server):
    backend = create_backend(openai_config(smol_server.base_url, model=SMOL, params={"max_tokens": 4, "temperature": 0}))
    shared = "You label colours. " + " ".join(f"Example {i}: red is warm, blue is cool." for i in range(20))
    first, second = (backend.chat([{"role": "system", "content": shared}, {"role": "user", "content": q}])
                     for q in ("Is green warm?", "Is orange warm?"))
    for one in (first, second):
        assert one.usage.prompt_ms > 0 and one.usage.decode_ms > 0  # llama.cpp's timings beside the usage
    # the second request read only what follows the shared system message
    assert second.usage.cached_tokens > 0.8 * second.usage.prompt_tokens
    assert "reading prompts" in (first.usage + second.usage).time_split()


def test_cached_tokens_of_an_openai_or_vllm_server_are_read_and_a_malformed_timing_is_ignored(stub):
    server = stub(usage_extra={"prompt_tokens_details": {"cached_tokens": 2}},
                  extra={"timings": {"prompt_ms": "fast", "predicted_ms": 12.5, "cache_n": 99}})
    one = create_backend(openai_config(server.base_url)).chat([{"role": "user", "content": "one two three"}])
    assert isinstance(one, ChatResult)
    # usage.prompt_tokens_details wins over llama.cpp's cache_n; a timing that is no number is left out
    assert (one.usage.cached_tokens, one.usage.prompt_ms, one.usage.decode_ms) == (2, 0.0, 12.5)
    plain = create_backend(openai_config(stub().base_url)).chat([{"role": "user", "content": "one two"}])
    assert plain.usage.to_dict() == {"prompt_tokens": plain.usage.prompt_tokens,
                                     "completion_tokens": plain.usage.completion_tokens}
