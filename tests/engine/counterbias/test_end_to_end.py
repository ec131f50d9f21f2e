"""CoBA end to end through the real openai client against llama.cpp serving SmolLM2 on loopback.

triples -> categorise -> rewrite -> reconstruct -> candidates -> ensemble judge -> accept ->
augmented dataset -> CSV export with provenance. SmolLM2-135M is too small to do the task well,
so some slots fail: the test checks that failures are recorded per item and never raised.
"""

from __future__ import annotations

import csv
import json

from engine.counterbias import (
    GenerateSettings,
    build_augmented_dataset,
    candidate_rows,
    generate_counterbias,
    set_decision,
)
from engine.io.exporter import export_dataset
from engine.llm.config import LLMConfig


def test_generate_judge_accept_export(voted_project, smol_server, tmp_path):
    project = voted_project
    dataset = project.dataset("reviews")
    config = LLMConfig(backend="openai", model=smol_server.model, base_url=smol_server.base_url, concurrency=2,
                       params={"temperature": 0.0, "max_tokens": 96, "seed": 0})
    settings = GenerateSettings(temperature=0.0, drop_prob=0.0, max_tokens=96, edit_triples=True)
    result = generate_counterbias(project, dataset.id, None, config, settings=settings)
    assert len(result.created) + len(result.failed) == 10  # one slot per sentence (binary: the other label)
    assert result.sent > 0
    # SmolLM2 often answers unusably; failed slots are retried by running again (a retry after an
    # unusable answer samples with a new seed), as an analyst would press Generate again.
    runs = [result]
    while not result.created and len(runs) < 4:
        result = generate_counterbias(project, dataset.id, None, config, settings=settings)
        runs.append(result)
    rows = candidate_rows(project, dataset_id=dataset.id)
    assert len(rows) == 10  # failed slots are replaced, never duplicated
    for row in rows:
        assert row["target_label"] != row["meta"]["original_label"]
        if row["status"] == "failed":
            error = row["meta"]["error"]
            assert error["step"] and error["message"] and error["retriable"]
        else:
            steps = row["meta"]["fields"][0]
            assert steps["triples"] and len(steps["categories"]) == len(steps["triples"])
            assert "principal" in steps["categories"]
            assert row["text"] and row["scores"]["judge"]["members"]
            assert set(row["scores"]["judge"]["members"]) == {"r:tiny-distilbert", "r:tiny-roberta", "r:tiny-mpnet"}
    made = [r for r in rows if r["status"] == "proposed"]
    assert made, [(r["meta"]["error"], r["meta"]["fields"][0]["raw"] if r["meta"]["fields"] else None) for r in rows]

    # A rerun skips what is made and only retries the failed slots.
    again = generate_counterbias(project, dataset.id, None, config, settings=settings)
    assert again.skipped == len(made) and len(again.created) + len(again.failed) == 10 - len(made)
    made = [r for r in candidate_rows(project, dataset_id=dataset.id) if r["status"] == "proposed"]

    set_decision(project, made[0]["id"], "accepted")
    if len(made) > 1:
        set_decision(project, made[1]["id"], "accepted", text="An edited counterbias text.")
    augmented = build_augmented_dataset(project, dataset.id)
    assert augmented.dataset.row_count == 10 + min(2, len(made))
    out = tmp_path / "augmented.csv"
    export_dataset(project, augmented.dataset.name, out)
    with open(out, newline="", encoding="utf-8-sig") as f:
        exported = list(csv.DictReader(f))
    assert len(exported) == augmented.dataset.row_count
    new = [r for r in exported if r["source"] == "augmented"]
    assert {r["method"] for r in new} == {"coba"}
    first = next(r for r in new if int(r["parent_id"]) == made[0]["example_id"])
    assert first["label"] == first["target_label"] == made[0]["target_label"]
    provenance = json.loads(first["provenance"])
    assert provenance["backend"] == "openai" and provenance["model"] == smol_server.model
    assert provenance["judge"]["members"] and provenance["candidate_id"] == made[0]["id"]
