"""Decisions with an audit trail and exact undo; the augmented dataset needs an accepted candidate."""

from __future__ import annotations

import pytest

from engine.counterbias import (
    CandidateFilter,
    GenerateSettings,
    NothingAcceptedError,
    ReviewError,
    build_augmented_dataset,
    candidate_rows,
    generate_counterbias,
    judge_candidates,
    restore,
    set_decision,
)
from engine.llm.config import LLMConfig
from tests.engine.counterbias.scripted_llm import scripted_reply


def test_decide_undo_and_augment(voted_project, stub):
    server = stub(reply=scripted_reply)
    project = voted_project
    dataset = project.dataset("reviews")
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url)
    result = generate_counterbias(project, dataset.id, None, config, settings=GenerateSettings(drop_prob=0.0))
    assert len(result.created) == 10 and not result.failed
    rows = candidate_rows(project, dataset_id=dataset.id)
    originals = {e["id"]: e["text"] for e in project.examples([r["example_id"] for r in rows])}
    love = next(r for r in rows if originals[r["example_id"]] == "I love the movie.")
    assert love["text"] == "I hate the movie."  # its only triple is rewritten (principal, or the fallback)
    scores = rows[0]["scores"]
    assert set(scores["judge"]) >= {"members", "predicted", "flipped", "left_original", "target_prob"}
    assert "passes" in scores and "spurious_kept" in scores

    with pytest.raises(NothingAcceptedError):
        build_augmented_dataset(project, dataset.id)
    cid = rows[0]["id"]
    before = set_decision(project, cid, "accepted", text="A new text.")
    assert before.status == "proposed" and before.text == rows[0]["text"]
    assert candidate_rows(project, example_ids=[rows[0]["example_id"]])[0]["text"] == "A new text."
    restore(project, cid, before)
    back = candidate_rows(project, example_ids=[rows[0]["example_id"]])[0]
    assert back["status"] == "proposed" and back["text"] == rows[0]["text"]
    decisions = [r[0] for r in project.db.execute("SELECT decision FROM decisions WHERE candidate_id = ? ORDER BY id", [cid])]
    assert decisions == ["edit", "undo"]
    with pytest.raises(ReviewError):
        set_decision(project, cid, "maybe")
    with pytest.raises(ReviewError, match="empty"):
        set_decision(project, cid, "accepted", text="  ")

    set_decision(project, cid, "accepted")
    set_decision(project, rows[1]["id"], "rejected")
    first = build_augmented_dataset(project, dataset.id)
    assert (first.original, first.added) == (10, 1) and first.dataset.kind == "augmented"
    second = build_augmented_dataset(project, dataset.id)  # the same accepted row is reused
    assert second.dataset.name != first.dataset.name
    count = project.db.execute("SELECT COUNT(*) FROM examples WHERE source = 'augmented'").fetchone()[0]
    assert count == 1

    # re-judging with a stricter filter updates the stored scores
    again = judge_candidates(project, [cid], ["r:tiny-distilbert", "r:tiny-roberta", "r:tiny-mpnet"])
    assert set(again) == {cid}
    members = again[cid]["judge"]["members"]
    from engine.models.store import get_model

    for name, member in members.items():  # each member's dev accuracy goes with its reading (the "best" rule)
        assert member["dev_accuracy"] == pytest.approx(get_model(project, name).metrics["dev_accuracy"], abs=1e-4)
    best = judge_candidates(project, [cid], list(members), criteria=CandidateFilter(agreement="best"))[cid]
    assert best["verdicts"]["member-agreement"]["status"] in ("pass", "fail")
    assert "most accurate member" in best["verdicts"]["member-agreement"]["reason"]
