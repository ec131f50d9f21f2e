"""The edit method's stage list, and the prompts a run records: exactly those of its enabled stages."""

from __future__ import annotations

import json

import pytest

from engine.counterbias import GenerateSettings
from engine.generation import generate_counterbias
from engine.generation.edit.pipeline import EDIT_STAGES, Stage, edit_prompts, run_edit_chunk
from engine.generation.job import run_prompts
from engine.generation.reconstruct import PROMPTS as RECONSTRUCT_PROMPTS
from engine.llm.config import LLMConfig
from engine.llm.prompts import load_prompt
from tests.engine.counterbias.scripted_llm import scripted_reply
from tests.engine.counterbias.test_edit_mode import _dataset_with_vote


def test_the_stages_run_in_this_order_each_gated_by_its_option():
    assert [(s.name, s.option) for s in EDIT_STAGES] == [
        ("read", "edit_polar"), ("mark", "edit_opinion"), ("plan", None), ("hold", "edit_hold"), ("first", None),
        ("fresh", "edit_fresh"), ("swap", "edit_swap"), ("drop", None), ("remove", "edit_remove"),
        ("unedited", None), ("build", None), ("flip", "repair_flip"), ("residual", None), ("unread", None)]
    for stage in EDIT_STAGES:
        assert stage.option is None or hasattr(GenerateSettings(), stage.option), stage.name
        for name in stage.prompts:
            load_prompt(name)  # every prompt a stage names exists


def test_the_package_doc_lists_the_stages_in_order():
    import engine.generation

    doc = engine.generation.__doc__
    positions = [doc.index(f"``{s.name}``") for s in EDIT_STAGES]
    assert positions == sorted(positions)


def test_run_edit_chunk_walks_only_the_enabled_stages():
    seen = []
    stages = [Stage("a", lambda run: seen.append("a")), Stage("b", lambda run: seen.append("b"), "edit_hold"),
              Stage("c", lambda run: seen.append("c"), "edit_fresh", needs=("edit_hold",))]

    class Run:
        settings = GenerateSettings(edit_hold=False)

    run_edit_chunk(Run(), stages)
    assert seen == ["a"]


def test_the_prompts_follow_the_settings():
    default = edit_prompts(GenerateSettings(), ["text"])
    assert {"edit_sentence_hold", "opposite_phrase", "opinion_words", "read_sentence"} <= set(default)
    assert "edit_sentence_hold" not in edit_prompts(GenerateSettings(edit_hold=False), ["text"])
    assert "opposite_phrase" not in edit_prompts(GenerateSettings(edit_swap=False), ["text"])
    assert "edit_sentence_strong" not in edit_prompts(GenerateSettings(edit_fresh=False), ["text"])
    assert "read_sentence" not in edit_prompts(GenerateSettings(sentence_reader="members"), ["text"])
    # without a text field there is no sentence reader: no reading, marking, hold or swap
    assert set(edit_prompts(GenerateSettings(), ["hypothesis"])) == {
        "edit_sentence", "edit_sentence_repair", "edit_sentence_strong", "edit_flip_repair"}
    assert run_prompts(GenerateSettings(mode="reconstruct"), ["text"]) == RECONSTRUCT_PROMPTS


def _recorded_prompts(project, dataset_id):
    row = project.db.execute("SELECT params FROM runs WHERE kind = 'generate' AND dataset_id = ? ORDER BY id DESC "
                             "LIMIT 1", (dataset_id,)).fetchone()
    return json.loads(row[0])["prompts"]


@pytest.mark.parametrize("hold", [True, False])
def test_a_run_records_exactly_its_enabled_stages_prompts(voted_project, stub, tmp_path, hold):
    dataset = _dataset_with_vote(voted_project, tmp_path)
    server = stub(reply=scripted_reply)
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url)
    settings = GenerateSettings(edit_hold=hold, swap_gender=False)
    first = [int(next(iter(voted_project.iter_examples(dataset.id)))["id"])]
    result = generate_counterbias(voted_project, dataset.id, first, config, settings=settings, judge=())
    assert len(result.created) == 1
    prompts = _recorded_prompts(voted_project, dataset.id)
    enabled = [p for s in EDIT_STAGES if s.enabled(settings) for p in s.prompts] + ["read_sentence"]
    assert set(prompts) == set(enabled)
    assert ("edit_sentence_hold" in prompts) is hold and "opposite_phrase" in prompts
    assert prompts["edit_sentence_hold" if hold else "opposite_phrase"] == load_prompt(
        "edit_sentence_hold" if hold else "opposite_phrase").sha256[:12]
