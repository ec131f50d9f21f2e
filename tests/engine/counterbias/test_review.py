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


def test_candidates_with_their_originals(voted_project, stub):
    """Each listed candidate carries its example's fields, label and the edit distance of its current text."""
    from engine.counterbias.review import candidate_rows_with_originals, edit_distance, with_originals

    server = stub(reply=scripted_reply)
    project = voted_project
    dataset = project.dataset("reviews")
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url)
    generate_counterbias(project, dataset.id, None, config, settings=GenerateSettings(drop_prob=0.0))
    rows = candidate_rows(project, dataset_id=dataset.id)
    joined = candidate_rows_with_originals(project, dataset.id)
    assert [r["id"] for r in joined] == [r["id"] for r in rows]
    examples = {e["id"]: e for e in project.examples([r["example_id"] for r in rows])}
    for row, out in zip(rows, joined, strict=True):
        example = examples[row["example_id"]]
        assert out["original"] == {"text": example["text"], "premise": None, "hypothesis": None}
        assert out["original_label"] == example["label"]
        assert out["edit_distance"] == edit_distance(row, out["original"])
        assert {k: out[k] for k in row} == row  # the candidate's own fields are kept
    love = next(r for r in joined if r["original"]["text"] == "I love the movie.")
    assert love["text"] == "I hate the movie." and 0.0 < love["edit_distance"] <= 1.0

    # the distance follows the analyst's edit; a failed candidate has none; an unknown example joins to nothing
    set_decision(project, love["id"], "accepted", text="I love the movie.")
    edited = with_originals(project, candidate_rows(project, example_ids=[love["example_id"]]))
    assert next(r for r in edited if r["id"] == love["id"])["edit_distance"] == 0.0
    assert with_originals(project, [{**love, "status": "failed"}])[0]["edit_distance"] is None
    gone = with_originals(project, [{**love, "example_id": 10**6}])[0]
    assert gone["original"] == {"text": None, "premise": None, "hypothesis": None} and gone["original_label"] is None
    assert with_originals(project, []) == []


def test_judge_members_of_listed_candidates(voted_project, monkeypatch):
    """Who judges candidates again: the members that judged them, then the default judges, only those stored."""
    from engine.attribution import explainers
    from engine.counterbias.verify import judge_members, judged_by

    project = voted_project
    dataset = project.dataset("reviews")
    stored = ["r:tiny-distilbert", "r:tiny-roberta", "r:tiny-mpnet"]
    assert judge_members(project, dataset.id) == explainers.default_judges(project, dataset.id) == stored

    def judged(*names):
        return {"scores": {"judge": {"members": {n: {"predicted": "Positive"} for n in names}}}}

    # the first candidate judged by any sets the order; a name no longer stored is left out
    listed = [{"scores": {}}, judged("r:tiny-mpnet", "r:gone"), judged("r:tiny-roberta")]
    assert judged_by(listed[1]) == ["r:tiny-mpnet", "r:gone"] and judged_by(listed[0]) == []
    assert judge_members(project, dataset.id, listed) == ["r:tiny-mpnet", "r:tiny-distilbert", "r:tiny-roberta"]
    # without a dataset: only the members that judged them
    assert judge_members(project, None, listed) == ["r:tiny-mpnet"]
    # the default judges come from explainers.default_judges (a member stored since judges too), with ``voted``
    seen = []
    monkeypatch.setattr(explainers, "default_judges",
                        lambda project, dataset_id, voted=None: seen.append(voted) or [*stored[::-1], "r:missing"])
    assert judge_members(project, dataset.id, voted=["r:tiny-roberta"]) == stored[::-1]
    assert seen == [["r:tiny-roberta"]]
