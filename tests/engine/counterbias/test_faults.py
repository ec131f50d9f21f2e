"""Generation against a loopback server that fails a fraction of calls in every way it can.

500 / 429 / timeout / garbage / truncated bodies on some first attempts (with client retries off,
so they surface as per-item failures): the run completes, failed slots are stored as failed and
retriable, a second run retries only them, and answers already received are never re-sent.
"""

from __future__ import annotations

import hashlib

import pytest

from engine.counterbias import GenerateSettings, candidate_rows, generate_counterbias
from engine.errors import Cancelled
from engine.llm.config import LLMConfig
from engine.progress import CancelToken
from tests.engine.counterbias.scripted_llm import scripted_reply
from tests.engine.llm.stub_server import body_key

FAULTS = ["500", "429", "slow", "garbage", "truncated"]


def faulty(body, attempt):
    """About a third of distinct requests fail on their first attempt; later attempts pass."""
    digest = int(hashlib.sha256(repr(body["messages"]).encode()).hexdigest(), 16)
    if attempt == 1 and digest % 3 == 0:
        return FAULTS[digest % len(FAULTS)]
    return "ok"


def test_faults_are_recorded_per_item_and_retried(voted_project, stub):
    first_answer: dict[str, str] = {}

    def plan(body, attempt):
        behaviour = faulty(body, attempt)
        first_answer.setdefault(body_key(body), behaviour)
        return behaviour

    server = stub(plan, reply=scripted_reply, slow_s=1.5, retry_after="0")
    project = voted_project
    dataset = project.dataset("reviews")
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, timeout_s=0.5, max_retries=0,
                       concurrency=4)
    settings = GenerateSettings(drop_prob=0.0)

    first = generate_counterbias(project, dataset.id, None, config, settings=settings, judge=())
    rows = candidate_rows(project, dataset_id=dataset.id)
    failed = [r for r in rows if r["status"] == "failed"]
    assert failed, "the plan injects faults, some slots must fail"
    assert len(first.created) + len(first.failed) == 10 == len(rows)
    assert all(r["meta"]["error"]["retriable"] and r["meta"]["error"]["message"] for r in failed)
    assert {r["meta"]["error"]["step"] for r in failed} <= {"triples", "edit", "flip repair", "read"}
    assert any(b != "ok" for b in first_answer.values())

    # Retrying can meet a new fault at a later step (a retried rewrite leads to a first
    # reconstruct request), so run until every slot is made; each run skips what is done.
    made = len(first.created)
    for _ in range(5):
        again = generate_counterbias(project, dataset.id, None, config, settings=settings, judge=())
        assert again.skipped == made  # made candidates are not made again
        made += len(again.created)
        if not again.failed:
            break
    rows = candidate_rows(project, dataset_id=dataset.id)
    assert len(rows) == 10
    assert all(r["status"] == "proposed" for r in rows), [d for d in _debug(rows) if d[1] != "proposed"]
    for key, behaviour in first_answer.items():
        # answered requests were never sent again; failed ones exactly once more
        assert server.attempts[key] == (1 if behaviour == "ok" else 2), (key, behaviour)


def _debug(rows):
    return [(r["id"], r["status"], (r["meta"].get("error") or {}).get("step"), (r["meta"].get("error") or {}).get("message")) for r in rows]


def test_unusable_answers_are_retried_with_a_new_seed(voted_project, stub):
    """A rewrite that changes nothing fails the slot (after one repair); the retry samples anew (reconstruct mode)."""
    sent: list[dict] = []

    def reply(body):
        sent.append(body)
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        facts = [u for u in users if "Facts to edit:" in u]
        if facts and body.get("seed", 0) < 1000:  # first attempt: echo the facts unchanged
            return facts[-1].split("Facts to edit:", 1)[1].strip()
        return scripted_reply(body)

    server = stub(reply=reply)
    project = voted_project
    dataset = project.dataset("reviews")
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url)
    settings = GenerateSettings(mode="reconstruct", drop_prob=0.0, temperature=0.0)
    first = generate_counterbias(project, dataset.id, None, config, settings=settings, judge=())
    assert len(first.failed) == 10 and not first.created
    rows = candidate_rows(project, dataset_id=dataset.id)
    for r in rows:
        error = r["meta"]["error"]
        assert error["step"] == "rewrite" and error["quality"] and "without changing them" in error["message"]
        assert len(r["meta"]["fields"][0]["raw"]) == 2  # the answer and the repair's answer, both kept
        assert r["meta"]["attempt"] == 0
    repairs = [b for b in sent if "cannot be used" in b["messages"][-1]["content"]]
    assert len(repairs) == 10 and "repeated the facts" in repairs[0]["messages"][-1]["content"]

    sent.clear()
    second = generate_counterbias(project, dataset.id, None, config, settings=settings, judge=())
    assert len(second.created) == 10 and not second.failed
    rewrites = [b for b in sent if "Facts to edit:" in b["messages"][-1]["content"]]
    assert rewrites and all(b["seed"] == 13 + 1000 and b["temperature"] >= 0.7 for b in rewrites)
    assert all(r["meta"]["attempt"] == 1 for r in candidate_rows(project, dataset_id=dataset.id))


def test_candidates_are_judged_chunk_by_chunk_so_a_cancelled_run_leaves_none_unjudged(voted_project, stub):
    """Cancelled after the first chunk: the candidates stored so far already carry the members' judgement and
    the verdicts (before, the judge ran only at the end of the call, so a stopped run left them unjudged)."""
    server = stub(reply=scripted_reply)
    project = voted_project
    dataset = project.dataset("reviews")
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, concurrency=1)
    token = CancelToken()

    def progress(fraction, message=""):
        if message.startswith("counterbias: 4/"):
            token.cancel()

    with pytest.raises(Cancelled):
        generate_counterbias(project, dataset.id, None, config, settings=GenerateSettings(drop_prob=0.0),
                             judge=["r:tiny-distilbert"], chunk_size=4, progress=progress, cancel=token)
    rows = candidate_rows(project, dataset_id=dataset.id)
    assert 0 < len(rows) <= 4
    made = [r for r in rows if r["status"] != "failed"]
    assert made
    for row in made:
        assert set(row["scores"]["judge"]["members"]) == {"r:tiny-distilbert"}
        assert "label-flip" in row["scores"]["verdicts"] and "passes" in row["scores"]
