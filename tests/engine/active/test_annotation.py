"""The annotation loop's engine: held-out split, next batch, labels of examples and counterfactuals, retraining."""

from __future__ import annotations

import pytest

from engine.active.annotation import (
    annotate,
    annotation_setup,
    annotations,
    learning_curve,
    make_counterfactuals,
    next_batch,
    remove_annotation,
    retrain,
)
from engine.active.errors import ActiveLearningError
from engine.counterbias import candidate_rows
from engine.io import ImportOptions, import_file
from engine.llm.config import LLMConfig
from engine.store import Project
from tests.engine.active.test_llm_source import NEG, POS
from tests.engine.counterbias.scripted_llm import edit_sentence

MORE_POS = ["A great cast and a beautiful score.", "I would recommend it to anyone.", "Great fun from start to end.",
            "The best comedy of the decade.", "Beautiful and moving, I love it.", "My favorite film of all time."]
MORE_NEG = ["A bad cast and an ugly score.", "I would not recommend it to anyone.", "Bad fun from start to end.",
            "The worst comedy of the decade.", "Ugly and dull, I hate it.", "My least favorite film of all time."]


def _project(tmp_path) -> Project:
    csv = tmp_path / "d.csv"
    rows = [(t, "pos") for t in POS + MORE_POS] + [(t, "neg") for t in NEG + MORE_NEG]
    csv.write_text("text,label\n" + "".join(f'"{t}",{lab}\n' for t, lab in rows), encoding="utf-8")
    project = Project.create(tmp_path / "ann.cbproj")
    import_file(project, csv, options=ImportOptions(name="d"))
    return project


def test_label_retrain_and_resume(tmp_path):
    project = _project(tmp_path)
    dataset = project.dataset("d")
    setup = annotation_setup(project, "d")
    assert len(setup.test_ids) == 8 and not set(setup.test_ids) & set(setup.pool_ids)
    assert annotation_setup(project, "d") == setup  # the same split every time

    first = next_batch(project, setup, strategy="random", n=4)
    assert len(first) == 4 and set(first) <= set(setup.pool_ids)
    gold = {int(r["id"]): r["label"] for r in project.examples(first)}
    for i in first:
        annotate(project, dataset.id, i, gold[i], strategy="random")
    second = next_batch(project, setup, strategy="random", n=4)
    assert not set(second) & set(first)  # labelled examples are not offered again
    assert second[:2] == next_batch(project, setup, strategy="random", n=2)
    clustered = next_batch(project, setup, strategy="cluster", n=3)
    assert len(clustered) == 3 and not set(clustered) & set(first)

    # relabelling replaces; unknown labels are refused
    annotate(project, dataset.id, first[0], "neg" if gold[first[0]] == "pos" else "pos")
    annotate(project, dataset.id, first[0], gold[first[0]])
    assert len(annotations(project, dataset.id)) == 4
    with pytest.raises(ActiveLearningError):
        annotate(project, dataset.id, first[0], "meh")

    point = retrain(project, setup, learner="tfidf-lr")
    assert point.annotations == 4 and point.counterfactuals == 0 and point.test_size == 8
    assert 0.0 <= point.macro_f1 <= 1.0
    for i in second:
        annotate(project, dataset.id, i, str(project.examples([i])[0]["label"]))
    later = retrain(project, setup, learner="tfidf-lr")
    assert later.annotations == 8
    path = project.path
    project.close()
    with Project.open(path) as again:  # the session resumes: labels and curve are stored
        assert [p.annotations for p in learning_curve(again, setup, learner="tfidf-lr")] == [4, 8]
        assert len(annotations(again, dataset.id)) == 8


def test_counterfactuals_are_made_labelled_and_trained_on(tmp_path, stub):
    def reply(body):
        user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        if "\nText: " in user:
            return edit_sentence(user.split("\nText: ", 1)[1])
        return "CANNOT"  # pattern phrases: no phrase, so the plain edit is used (or the candidate fails)

    server = stub(reply=reply)
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0)
    project = _project(tmp_path)
    dataset = project.dataset("d")
    setup = annotation_setup(project, "d")
    batch = next_batch(project, setup, n=6)
    for r in project.examples(batch):
        annotate(project, dataset.id, int(r["id"]), str(r["label"]))
    made = make_counterfactuals(project, dataset.id, batch[:3], config, method="llm")
    assert len(made["llm"]) + made["failed"] == 3 and made["llm"]
    rows = {r["id"]: r for r in candidate_rows(project, example_ids=batch[:3]) if r["status"] == "proposed"}
    assert all("verdicts" in r["scores"] for r in rows.values())  # checked like every candidate
    assert not any((r["scores"].get("judge") or {}).get("members") for r in rows.values())  # no member yet
    from engine.models import MemberSpec, train_member, train_preset

    train_member(project, dataset.id, MemberSpec("judge", "minilm-l3", {}, train_preset("quick-cpu", max_length=32,
                                                                                        epochs=2)))
    judged = make_counterfactuals(project, dataset.id, batch[3:4], config, method="llm")  # judged by default
    judged_rows = [r for r in candidate_rows(project, example_ids=batch[3:4]) if r["id"] in set(judged["llm"])]
    assert judged_rows and all(set((r["scores"].get("judge") or {}).get("members") or {}) == {"judge"}
                               for r in judged_rows)
    assert all(r["scores"]["verdicts"]["label-flip"]["status"] != "skip" for r in judged_rows)  # the label was read
    cid = made["llm"][0]
    cand = rows[cid]
    annotate(project, dataset.id, cand["example_id"], cand["target_label"], candidate_id=cid)
    with pytest.raises(ActiveLearningError):
        annotate(project, dataset.id, batch[5] if batch[5] != cand["example_id"] else batch[4], "pos", candidate_id=cid)
    point = retrain(project, setup, learner="tfidf-lr")
    assert point.annotations == 6 and point.counterfactuals == 1
    assert remove_annotation(project, dataset.id, cand["example_id"], cid)
    assert retrain(project, setup, learner="tfidf-lr").counterfactuals == 0

    # vt: patterns come from the analyst's labels; examples without a usable phrase fall back or fail, recorded
    vt = make_counterfactuals(project, dataset.id, batch[4:], config, method="vt")
    assert vt["patterns"] > 0
    assert len(vt["vt"]) + len(vt["llm"]) + vt["failed"] >= 2
    project.close()


def test_annotate_cli_steps_and_exit_codes(tmp_path, capsys):
    import json

    from engine.cli import main

    project = _project(tmp_path)
    path = str(project.path)
    project.close()
    assert main(["-q", "annotate", path, "d", "--next", "3", "--strategy", "random", "--json"]) == 0
    chosen = json.loads(capsys.readouterr().out)["next"]
    assert len(chosen) == 3
    with Project.open(path) as p:
        gold = {int(r["id"]): str(r["label"]) for r in p.examples([c["id"] for c in chosen])}
    labels = [a for c in chosen for a in ("--label", str(c["id"]), gold[c["id"]])]
    assert main(["-q", "annotate", path, "d", *labels, "--retrain", "--learner", "tfidf-lr", "--next", "2",
                 "--strategy", "random", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["labelled"] == 3 and out["retrained"]["labels"] == 3
    assert not {c["id"] for c in out["next"]} & set(gold)  # labelled examples are not chosen again
    assert main(["-q", "annotate", path, "d", "--curve", "--learner", "tfidf-lr"]) == 0
    assert "3 labels +   0 counterfactuals: macro-F1" in capsys.readouterr().out
    for argv, code in [(["annotate", path, "d"], "CB990"),
                       (["annotate", path, "d", "--label", str(chosen[0]["id"]), "meh"], "CB990")]:
        assert main(["-q", *argv]) == 3
        err = capsys.readouterr().err
        assert f"[{code}]" in err and "Traceback" not in err
