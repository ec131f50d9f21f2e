"""Issue 15, LLM spend: authentication and connection failures stop a run at once.

Every test runs the CLI in-process against a real loopback HTTP server
(:class:`tests.engine.llm.stub_server.StubServer`) that counts the requests it receives, or
against a port where nothing listens.
"""

from __future__ import annotations

import csv
import socket
import sqlite3
import time

import pytest

from engine.cli import main
from engine.errors import EXIT_OK, EXIT_USER_ERROR
from tests.engine.counterbias.conftest import voted_project, voted_project_template  # noqa: F401
from tests.engine.counterbias.scripted_llm import scripted_reply
from tests.engine.llm.conftest import stub  # noqa: F401

N_EXAMPLES = 20


@pytest.fixture
def project_path(tmp_path):
    """A project with a dataset ``d`` of 20 one-sentence examples."""
    src = tmp_path / "d.csv"
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows([(f"Review number {i} says the film is {'good' if i % 2 else 'bad'}.", "pos" if i % 2 else "neg")
                     for i in range(N_EXAMPLES)])
    path = tmp_path / "p.cbproj"
    assert main(["-q", "init", str(path)]) == EXIT_OK
    assert main(["-q", "import", str(path), str(src), "--name", "d"]) == EXIT_OK
    return path


def llm_args(base_url: str) -> list[str]:
    return ["--backend", "openai", "--base-url", base_url, "--model", "stub"]


def cache_rows(path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0]


def last_run(path) -> tuple[str, str]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT status, message FROM runs ORDER BY id DESC LIMIT 1").fetchone()


@pytest.fixture
def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_triples_401_everywhere_stops_after_one_request(project_path, stub, capsys):
    server = stub(lambda body, attempt: "401")
    capsys.readouterr()
    code = main(["-q", "triples", str(project_path), "d", *llm_args(server.base_url)])
    err = capsys.readouterr().err
    assert code == EXIT_USER_ERROR
    assert "[CB702]" in err and "stopped at this first failure" in err
    assert server.count == 1  # one request, not one per example (was 62)
    assert last_run(project_path)[0] == "failed"


def test_triples_key_revoked_mid_run_stops_and_keeps_the_answers(project_path, stub, capsys):
    # The first 5 requests are answered, then the key is refused: the run stops, the 5 stay cached
    # and the next run (key fixed) sends only what is missing.
    state = {"n": 0, "revoked": True}

    def plan(body, attempt):
        state["n"] += 1
        return "401" if state["revoked"] and state["n"] > 5 else "ok"

    server = stub(plan, latency=0.02, reply=scripted_reply)  # triples the sentence supports
    args = ["-q", "triples", str(project_path), "d", *llm_args(server.base_url), "--concurrency", "4"]
    assert main(args) == EXIT_USER_ERROR
    assert "[CB702]" in capsys.readouterr().err
    assert cache_rows(project_path) == 5
    assert server.count <= 5 + 4  # at most the requests already in flight when the 401 came
    sent_before = server.count
    state["revoked"] = False
    assert main(args) == EXIT_OK
    capsys.readouterr()
    assert server.count - sent_before == N_EXAMPLES - 5  # the answered five were not sent again
    assert cache_rows(project_path) == N_EXAMPLES


def test_triples_unreachable_base_url_fails_fast(project_path, unused_port, capsys):
    started = time.perf_counter()
    code = main(["-q", "triples", str(project_path), "d", *llm_args(f"http://127.0.0.1:{unused_port}/v1")])
    elapsed = time.perf_counter() - started
    err = capsys.readouterr().err
    assert code == EXIT_USER_ERROR and "[CB701]" in err and "Could not reach" in err
    assert elapsed < 30, elapsed  # was 56 s: a generous bound, whatever the machine's load
    assert last_run(project_path)[0] == "failed"


def test_generate_401_everywhere_stops_after_one_request(voted_project, stub, capsys):
    server = stub(lambda body, attempt: "401")
    path = str(voted_project.path)
    voted_project.close()
    code = main(["-q", "generate", path, "reviews", *llm_args(server.base_url)])
    assert code == EXIT_USER_ERROR
    assert "[CB702]" in capsys.readouterr().err
    assert server.count == 1


def test_generate_unreachable_base_url_fails_fast(voted_project, unused_port, capsys):
    path = str(voted_project.path)
    voted_project.close()
    started = time.perf_counter()
    code = main(["-q", "generate", path, "reviews", *llm_args(f"http://127.0.0.1:{unused_port}/v1")])
    assert code == EXIT_USER_ERROR and "[CB701]" in capsys.readouterr().err
    assert time.perf_counter() - started < 30  # stopped at the first failure, not one per example


def test_generate_after_a_401_resumes_with_the_cached_answers(voted_project, stub, capsys):
    state = {"n": 0, "revoked": True}

    def plan(body, attempt):
        state["n"] += 1
        return "401" if state["revoked"] and state["n"] > 4 else "ok"

    server = stub(plan, reply=scripted_reply)
    path = str(voted_project.path)
    voted_project.close()
    args = ["-q", "generate", path, "reviews", "--limit", "6", *llm_args(server.base_url)]
    assert main(args) == EXIT_USER_ERROR
    capsys.readouterr()
    answered = cache_rows(path)
    assert answered == 4
    state["revoked"] = False
    before = server.count
    assert main(args) == EXIT_OK
    capsys.readouterr()
    # nothing answered before is sent again: every new request is a cache miss stored now
    assert server.count - before == cache_rows(path) - answered
