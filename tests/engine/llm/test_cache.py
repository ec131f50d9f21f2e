"""The response cache: identical calls are never sent twice; responses are stored as they arrive."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from engine.errors import Cancelled
from engine.llm.base import ChatRequest, ChatResult, Failure, Usage
from engine.llm.cache import CachedClient
from engine.llm.config import LLMConfig
from engine.llm.errors import ServerError
from engine.llm.registry import create_backend
from engine.progress import CancelToken
from tests.engine.llm.conftest import item_number


def client_for(server, project, **kwargs) -> CachedClient:
    cfg = LLMConfig(backend="openai", model="stub", base_url=server.base_url, **kwargs)
    return CachedClient(create_backend(cfg), project)


def items(n: int) -> list[ChatRequest]:
    return [ChatRequest([{"role": "user", "content": f"item {i}"}]) for i in range(n)]


def cache_rows(project) -> int:
    return project.db.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0]


def test_second_identical_batch_sends_nothing(stub, project):
    server = stub()
    client = client_for(server, project)
    first = client.chat_many(items(10))
    assert server.count == 10 and first.sent == 10 and first.hits == 0
    assert first.usage == Usage(20, 60) and cache_rows(project) == 10
    again = client_for(server, project).chat_many(items(10))
    assert server.count == 10  # a cache hit is zero requests
    assert again.sent == 0 and again.hits == 10 and again.usage == Usage()
    assert again.cached_usage == first.usage
    assert all(isinstance(r, ChatResult) and r.cached for r in again.results)
    assert [r.text for r in again.results] == [r.text for r in first.results]
    row = project.db.execute("SELECT backend, model, request FROM llm_cache LIMIT 1").fetchone()
    assert row[0] == "openai" and row[1] == "stub" and '"messages"' in row[2]


def test_identical_requests_in_one_batch_are_sent_once(stub, project):
    server = stub()
    batch = client_for(server, project).chat_many([ChatRequest([{"role": "user", "content": "item 1"}])] * 5)
    assert server.count == 1 and batch.sent == 1 and len(batch.results) == 5
    assert len({r.text for r in batch.results}) == 1


def test_params_are_part_of_the_key(stub, project):
    server = stub()
    client = client_for(server, project, params={"temperature": 0, "max_tokens": 10})
    client.chat_many(items(2))
    client.chat_many([ChatRequest(r.messages, {"max_tokens": 11}) for r in items(2)])
    client.chat_many(items(2))
    assert server.count == 4 and client.total.hits == 2 and client.total.sent == 4


def test_failed_items_are_marked_and_only_they_are_sent_again(stub, project):
    healthy = threading.Event()

    def plan(body, attempt):
        return "ok" if healthy.is_set() or item_number(body) % 4 != 3 else "500"

    server = stub(plan)
    first = client_for(server, project, max_retries=1).chat_many(items(12))
    assert first.failures == [3, 7, 11]
    assert all(isinstance(first.results[i], Failure) and first.results[i].retriable for i in first.failures)
    assert server.count == 9 + 3 * 2 and cache_rows(project) == 9
    healthy.set()
    second = client_for(server, project, max_retries=1).chat_many(items(12))
    assert second.failures == [] and second.sent == 3 and second.hits == 9
    assert server.count == 15 + 3
    assert cache_rows(project) == 12


def test_responses_are_stored_while_the_batch_runs(stub, project):
    server = stub(lambda body, attempt: "slow" if item_number(body) == 0 else "ok", slow_s=1.5)
    client = client_for(server, project, concurrency=4, timeout_s=10)
    seen_during_batch: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        conn = sqlite3.connect(project.path)
        while not stop.is_set():
            seen_during_batch.append(conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0])
            time.sleep(0.05)
        conn.close()

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        batch = client.chat_many(items(10))
    finally:
        stop.set()
        watcher.join()
    assert len(batch.failures) == 0
    assert 9 in seen_during_batch  # the nine fast answers were committed before the slow one came


def test_cancel_keeps_every_finished_answer(stub, project):
    server = stub(latency=0.03)
    client = client_for(server, project, concurrency=2)
    token = CancelToken()
    reported = []

    def progress(fraction, message=""):
        reported.append(fraction)
        if len(reported) >= 5:
            token.cancel()

    with pytest.raises(Cancelled):
        client.chat_many(items(50), progress=progress, cancel=token)
    stored = cache_rows(project)
    assert 4 <= stored < 50
    count_before = server.count
    rest = client_for(server, project).chat_many(items(50))
    assert rest.hits == stored and server.count - count_before == 50 - stored


def test_chat_raises_the_named_error(stub, project):
    server = stub(lambda body, attempt: "500")
    with pytest.raises(ServerError):
        client_for(server, project, max_retries=0).chat([{"role": "user", "content": "item 1"}])
    assert cache_rows(project) == 0


def test_the_key_is_not_in_the_project_file(stub, project, monkeypatch):
    secret = "sk-cache-SECRET-0123456789"
    monkeypatch.setenv("CB_CACHE_KEY", secret)
    server = stub()
    client = client_for(server, project, api_key_env="CB_CACHE_KEY")
    client.chat_many(items(3))
    project.close()
    blob = b"".join(p.read_bytes() for p in project.path.parent.iterdir() if p.name.startswith(project.path.name))
    assert b"item 2" in blob and secret.encode() not in blob and b"SECRET-0123" not in blob
