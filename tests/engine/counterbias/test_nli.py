"""CoBA on an NLI project: the hypothesis is edited per field, the premise is kept, every other label is a target."""

from __future__ import annotations

import csv

import pytest

from engine.counterbias import (
    GenerateSettings,
    build_augmented_dataset,
    candidate_rows,
    generate_counterbias,
    set_decision,
)
from engine.io.exporter import export_dataset
from engine.llm.config import LLMConfig
from tests.engine.counterbias.conftest import TINY
from tests.engine.counterbias.scripted_llm import scripted_reply


@pytest.fixture
def nli_project(tmp_path):
    """Nine CAD NLI dev pairs (three per label), three tiny pair members, an IG vote."""
    from tests.conftest import SHARED_DATA

    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside this checkout")
    from engine.attribution import VoteSettings, find_principal_words
    from engine.io import ImportOptions, import_file
    from engine.models import EnsembleConfig, MemberSpec, train_ensemble, train_preset
    from engine.store import Project

    with open(SHARED_DATA / "cad/NLI/original/dev.tsv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    chosen = []
    for label in ("entailment", "neutral", "contradiction"):
        chosen += [r for r in rows if r["gold_label"] == label][:3]
    src = tmp_path / "pairs.csv"
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["premise", "hypothesis", "label"])
        w.writerows([(r["sentence1"], r["sentence2"], r["gold_label"]) for r in chosen])
    project = Project.create(tmp_path / "nli.cbproj")
    ds = import_file(project, src, options=ImportOptions(name="pairs")).dataset
    train = train_preset("fast-cpu", epochs=1, max_length=64)
    config = EnsembleConfig(tuple(MemberSpec(f"n:{b}", b, {}, train) for b in TINY))
    train_ensemble(project, ds.id, config)
    find_principal_words(project, ds.id, [m.name for m in config.members], methods={"ig": {"n_steps": 8}},
                         vote=VoteSettings(k=3, rule="majority"), wordlists=("gender",))
    yield project
    project.close()


def test_nli_edits_the_hypothesis_for_every_other_label(nli_project, stub, tmp_path):
    seen: list[dict] = []

    def reply(body):
        seen.append(body)
        return scripted_reply(body)

    server = stub(reply=reply)
    project = nli_project
    dataset = project.dataset("pairs")
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url)
    result = generate_counterbias(project, dataset.id, None, config, settings=GenerateSettings(drop_prob=0.0))
    assert not result.failed, [r["meta"]["error"] for r in candidate_rows(project, dataset_id=dataset.id)
                               if r["status"] == "failed"]
    rows = candidate_rows(project, dataset_id=dataset.id)
    originals = {e["id"]: e for e in project.examples([r["example_id"] for r in rows])}
    assert len(rows) == 9 * 2  # three labels: each other label is a target
    for ex_id, ex in originals.items():
        mine = [r for r in rows if r["example_id"] == ex_id]
        assert {r["target_label"] for r in mine} == set(dataset.labels) - {ex["label"]}
    for r in rows:
        ex = originals[r["example_id"]]
        assert r["premise"] == ex["premise"]  # the premise is the context, never edited
        steps = r["meta"]["fields"]
        assert [s["field"] for s in steps] == ["hypothesis"]
        assert steps[0]["triples"] == []  # edit mode chooses sentences by their words: no triple request
        assert steps[0]["edits"]
        assert r["hypothesis"]
        assert set(r["scores"]["judge"]["members"]) == {f"n:{b}" for b in TINY}
    # the edit prompt saw the premise as context, and only the hypothesis was edited
    edits = [b for b in seen if "Sentence to edit:" in b["messages"][-1]["content"]]
    assert edits and all("(premise)" in b["messages"][-1]["content"] for b in edits)
    assert not [b for b in seen if "You extract facts" in b["messages"][0]["content"]]

    # premise-only edits are a setting too
    premise = generate_counterbias(project, dataset.id, None, config,
                                   settings=GenerateSettings(drop_prob=0.0, fields=("premise",), targets="contradiction"))
    assert premise.created
    for cid in premise.created:
        row = next(r for r in candidate_rows(project, dataset_id=dataset.id) if r["id"] == cid)
        assert row["hypothesis"] == originals[row["example_id"]]["hypothesis"]
        assert row["target_label"] == "contradiction"

    set_decision(project, rows[0]["id"], "accepted")
    augmented = build_augmented_dataset(project, dataset.id)
    assert augmented.dataset.row_count == 10
    out = tmp_path / "augmented.csv"
    export_dataset(project, augmented.dataset.name, out)
    with open(out, newline="", encoding="utf-8-sig") as f:
        exported = list(csv.DictReader(f))
    new = [r for r in exported if r["source"] == "augmented"]
    assert len(new) == 1
    assert new[0]["premise"] == originals[rows[0]["example_id"]]["premise"]
    assert new[0]["hypothesis"] == rows[0]["hypothesis"] and new[0]["label"] == rows[0]["target_label"]
