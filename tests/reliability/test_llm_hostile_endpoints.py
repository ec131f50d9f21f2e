"""Issue 52, items 4-6 and 14 (in part): a hostile LLM endpoint cannot hold a run, fill a project or run for hours.

Every test talks to a real OpenAI-compatible server on loopback (:class:`tests.engine.llm.stub_server.StubServer`)
that drips its answer one byte every 2 s, floods a 10 MB answer or answers HTTP 500 forever; the CLI tests run
``python -m engine`` in a real process.
"""

from __future__ import annotations

import csv
import hashlib
import sqlite3
import time
import tracemalloc
from pathlib import Path

import pytest

from engine.llm.base import ChatRequest, ChatResult, Failure
from engine.llm.cache import CachedClient
from engine.llm.config import LLMConfig
from engine.llm.errors import AnswerTooLargeError, EndpointFailingError, LLMConfigError, LLMTimeoutError
from engine.llm.guard import answer_byte_cap
from engine.llm.registry import create_backend
from tests.engine.counterbias.scripted_llm import scripted_reply
from tests.engine.llm.conftest import stub  # noqa: F401
from tests.reliability.integrity import files_digest, integrity
from tests.reliability.storage_fs import cli

N_EXAMPLES = 30
#: What a run may legitimately write: its run record, its lock, its stored answers and results.
RUN_TABLES = {"runs", "triples", "llm_cache", "sqlite_sequence"}


@pytest.fixture
def project_path(tmp_path: Path) -> Path:
    """A project with a dataset ``d`` of 30 one-sentence examples, made by the CLI."""
    src = tmp_path / "d.csv"
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows([(f"Review number {i} says the film is {'good' if i % 2 else 'bad'}.", "pos" if i % 2 else "neg")
                     for i in range(N_EXAMPLES)])
    path = tmp_path / "p.cbproj"
    assert cli("init", str(path)).returncode == 0
    assert cli("import", str(path), str(src), "--name", "d").returncode == 0
    return path


def content_but_runs(path: Path) -> str:
    """SHA-256 of every table's rows except those a run records (:data:`RUN_TABLES`), read without writing."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        h = hashlib.sha256()
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for name in names:
            if name in RUN_TABLES:
                continue
            h.update(name.encode())
            for row in conn.execute(f'SELECT * FROM "{name}" ORDER BY 1'):
                h.update(repr(row).encode())
        return h.hexdigest()
    finally:
        conn.close()


def state(path: Path) -> tuple[str, dict]:
    """The content but the run's record, and every file beside the project (its run-lock folder aside)."""
    files = files_digest(path.parent, project=path)
    return content_but_runs(path), {k: v for k, v in files.items() if not k.endswith("/locks")}


def assert_only_the_run_recorded(path: Path, before: tuple[str, dict]) -> None:
    assert integrity(path) == "ok"
    after = state(path)
    assert after[0] == before[0], "content other than the run's record changed"
    changed = sorted(k for k in before[1].keys() | after[1].keys() if before[1].get(k) != after[1].get(k))
    assert not changed, f"files changed beside the project: {changed}"


def cache_rows(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0]


def last_run(path: Path) -> tuple[str, str]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT status, message FROM runs ORDER BY id DESC LIMIT 1").fetchone()


def triples(path: Path, server, *extra: str, timeout: float = 120):
    return cli("triples", str(path), "d", "--backend", "openai", "--base-url", server.base_url, "--model", "stub",
               *extra, timeout=timeout)


def assert_named_stop(done, code: str) -> None:
    assert done.returncode == 3, done.stderr
    assert f"[{code}]" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def backend(server, **kwargs):
    return create_backend(LLMConfig(backend="openai", model="stub", base_url=server.base_url, **kwargs))


# ---------------------------------------------------------------------------- item 4: a deadline, not an idle timeout


def test_item04_dripping_endpoint_hits_the_deadline(stub):
    # one byte every 2 s never lets the 3 s socket timeout fire; only a deadline ends the request
    server = stub(lambda body, attempt: "drip", drip_s=2.0)
    started = time.monotonic()
    out = backend(server, timeout_s=3, max_retries=1).chat_many([ChatRequest([{"role": "user", "content": "hi"}])])
    elapsed = time.monotonic() - started
    assert isinstance(out[0], Failure) and out[0].error == LLMTimeoutError.__name__ and out[0].code == "CB705"
    assert out[0].attempts == 2 and server.count == 2  # the deadline is retried like any timeout, then given up
    assert elapsed < 30, elapsed  # 2 x 3 s and a backoff; the drip would take minutes


def test_item04_dripping_endpoint_stops_triples_within_the_deadline(project_path, stub):
    server = stub(lambda body, attempt: "drip", drip_s=2.0)
    before = state(project_path)
    started = time.monotonic()
    done = triples(project_path, server, "--timeout", "2")
    elapsed = time.monotonic() - started
    assert_named_stop(done, "CB715")  # the breaker: every call ran out of time
    assert "[CB705]" in done.stderr and "within 2 s" in done.stderr
    assert elapsed < 55, elapsed  # was: still waiting after 200 s
    assert last_run(project_path)[0] == "failed"
    assert cache_rows(project_path) == 0
    assert_only_the_run_recorded(project_path, before)


# ---------------------------------------------------------------------------- item 5: a cap on an answer's size


@pytest.mark.parametrize("behaviour", ["flood", "flood_length"])
def test_item05_flooding_endpoint_is_refused_without_reading_it(stub, behaviour):
    server = stub(lambda body, attempt: behaviour, flood_bytes=10_000_000)
    client = backend(server, max_retries=3, params={"max_tokens": 256})
    tracemalloc.start()
    try:
        out = client.chat_many([ChatRequest([{"role": "user", "content": "hi"}])])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    failure = out[0]
    assert isinstance(failure, Failure) and failure.error == AnswerTooLargeError.__name__ and failure.code == "CB714"
    assert f"{answer_byte_cap(256):,} bytes" in failure.message and "not stored" in failure.message
    assert failure.attempts == 1 and server.count == 1  # refused, not sent again
    assert peak < 3_000_000, peak  # reading stopped at the cap: the 10 MB were never held


def test_item05_answer_within_the_cap_is_accepted(stub):
    server = stub(lambda body, attempt: "flood", flood_bytes=40_000)  # a long answer, under 256 tokens' cap
    out = backend(server, params={"max_tokens": 256}).chat_many([ChatRequest([{"role": "user", "content": "hi"}])])
    assert isinstance(out[0], ChatResult) and len(out[0].text) == 40_000


def test_item05_flooding_endpoint_grows_no_project(project_path, stub):
    server = stub(lambda body, attempt: "flood", flood_bytes=10_000_000)
    before = state(project_path)
    size_before = project_path.stat().st_size
    done = triples(project_path, server)
    assert_named_stop(done, "CB715")  # five refused answers in a row stop the run
    assert "[CB714]" in done.stderr
    assert cache_rows(project_path) == 0  # no 10 MB answer cached
    wal = project_path.with_name(project_path.name + "-wal")
    grown = project_path.stat().st_size + (wal.stat().st_size if wal.exists() else 0) - size_before
    assert grown < 1_000_000, grown  # was 12 MB per answer
    assert server.count <= 8 + 5  # the calls in flight when the breaker opened, each sent once
    assert last_run(project_path)[0] == "failed"
    assert_only_the_run_recorded(project_path, before)


# ---------------------------------------------------------------------------- item 6: a circuit breaker


def test_item06_http_500_forever_stops_the_run_and_keeps_what_was_done(project_path, stub):
    answered = {"n": 0}

    def plan(body, attempt):  # the first six answers arrive, then the server breaks for good
        answered["n"] += 1
        return "ok" if answered["n"] <= 6 else "500"

    server = stub(plan, reply=scripted_reply)  # triples the sentence supports: one request per example
    before = state(project_path)
    started = time.monotonic()
    done = triples(project_path, server, "--concurrency", "4")
    elapsed = time.monotonic() - started
    assert_named_stop(done, "CB715")
    assert "5 calls in a row" in done.stderr and "[CB707]" in done.stderr and "answers received before are kept" in \
        done.stderr
    # at most the calls in flight when the fifth failed call opened the breaker, five requests each (was all 24)
    assert server.count <= 6 + (5 + 3) * 5
    assert elapsed < 55, elapsed
    assert cache_rows(project_path) == 6  # what was done is kept
    assert last_run(project_path)[0] == "failed"
    assert_only_the_run_recorded(project_path, before)
    # the server is mended: the next run sends only what is missing
    answered["n"] = -1000
    sent = server.count
    again = triples(project_path, server)
    assert again.returncode == 0, again.stderr
    assert server.count - sent == N_EXAMPLES - 6


def test_item06_breaker_counts_calls_in_a_row_across_batches(project, stub):
    server = stub(lambda body, attempt: "500" if "down" in body["messages"][-1]["content"] else "ok")
    client = CachedClient(backend(server, max_retries=0, concurrency=1), project, breaker_limit=3)

    def ask(*words: str):
        return client.chat_many([ChatRequest([{"role": "user", "content": w}]) for w in words])

    assert len(ask("down 1", "down 2").failures) == 2
    assert not ask("up 1").failures  # an answer resets the count
    assert len(ask("down 3", "down 4").failures) == 2
    with pytest.raises(EndpointFailingError) as info:
        ask("down 5", "down 6")
    assert info.value.code == "CB715" and "3 calls in a row" in info.value.message
    assert server.count == 6  # down 6 was never sent
    stored = [r[0] for r in project.db.conn.execute("SELECT request FROM llm_cache")]
    assert len(stored) == 1 and "up 1" in stored[0]  # only the answer is cached


# ---------------------------------------------------------------------------- item 14: slots and threads


@pytest.mark.parametrize("flag, value, name", [("--slots", "0", "n_parallel"), ("--threads", "-1", "n_threads")])
def test_item14_slots_and_threads_below_one_are_refused(project_path, flag, value, name):
    before = state(project_path)
    done = cli("triples", str(project_path), "d", flag, value)
    assert_named_stop(done, LLMConfigError.code)
    assert name in done.stderr and flag in done.stderr
    with sqlite3.connect(project_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs WHERE kind = 'triples'").fetchone()[0] == 0
    assert_only_the_run_recorded(project_path, before)


def test_item14_serve_llm_refuses_zero_slots(tmp_path):
    done = cli("serve-llm", "--slots", "0", "--port", "0", cwd=tmp_path)
    assert_named_stop(done, "CB710")
    assert not any(tmp_path.iterdir())
