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
        ("read", "edit_polar"), ("mark", "edit_opinion"), ("plan", None), ("first", None),
        ("fresh", "edit_fresh"), ("swap", "edit_swap"), ("drop", None), ("remove", "edit_remove"),
        ("unedited", None), ("build", None), ("residual", None), ("unread", None)]
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
    stages = [Stage("a", lambda run: seen.append("a")), Stage("b", lambda run: seen.append("b"), "edit_swap"),
              Stage("c", lambda run: seen.append("c"), "edit_fresh", needs=("edit_swap",))]

    class Run:
        settings = GenerateSettings(edit_swap=False)
        client = type("Client", (), {"total": type("Total", (), {"sent": 0, "hits": 0})()})()
        requests: dict = {}

    run_edit_chunk(Run(), stages)
    assert seen == ["a"]


def test_the_prompts_follow_the_settings():
    default = edit_prompts(GenerateSettings(), ["text"])
    assert {"opposite_phrase", "opinion_words", "read_sentence"} <= set(default)
    assert not {"edit_sentence_hold", "edit_flip_repair"} & set(default)  # the removed stages' prompts
    assert "opposite_phrase" not in edit_prompts(GenerateSettings(edit_swap=False), ["text"])
    assert "edit_sentence_strong" not in edit_prompts(GenerateSettings(edit_fresh=False), ["text"])
    assert "read_sentence" not in edit_prompts(GenerateSettings(sentence_reader="members"), ["text"])
    # without a text field there is no sentence reader: no reading, marking, hold or swap
    assert set(edit_prompts(GenerateSettings(), ["hypothesis"])) == {
        "edit_sentence", "edit_sentence_repair", "edit_sentence_strong"}
    assert run_prompts(GenerateSettings(mode="reconstruct"), ["text"]) == RECONSTRUCT_PROMPTS


def _recorded_prompts(project, dataset_id):
    row = project.db.execute("SELECT params FROM runs WHERE kind = 'generate' AND dataset_id = ? ORDER BY id DESC "
                             "LIMIT 1", (dataset_id,)).fetchone()
    return json.loads(row[0])["prompts"]


@pytest.mark.parametrize("swap", [True, False])
def test_a_run_records_exactly_its_enabled_stages_prompts(voted_project, stub, tmp_path, swap):
    dataset = _dataset_with_vote(voted_project, tmp_path)
    server = stub(reply=scripted_reply)
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url)
    settings = GenerateSettings(edit_swap=swap, swap_gender=False)
    first = [int(next(iter(voted_project.iter_examples(dataset.id)))["id"])]
    result = generate_counterbias(voted_project, dataset.id, first, config, settings=settings, judge=())
    assert len(result.created) == 1
    prompts = _recorded_prompts(voted_project, dataset.id)
    enabled = [p for s in EDIT_STAGES if s.enabled(settings) for p in s.prompts] + ["read_sentence"]
    assert set(prompts) == set(enabled)
    assert ("opposite_phrase" in prompts) is swap and "opinion_words" in prompts
    assert prompts["opinion_words"] == load_prompt("opinion_words").sha256[:12]


def test_the_job_says_what_it_does_before_the_first_candidate(voted_project, stub, tmp_path):
    dataset = _dataset_with_vote(voted_project, tmp_path)
    server = stub(reply=scripted_reply)
    seen: list[str] = []
    first = [int(next(iter(voted_project.iter_examples(dataset.id)))["id"])]
    generate_counterbias(voted_project, dataset.id, first,
                         LLMConfig(backend="openai", model="stub", base_url=server.base_url),
                         settings=GenerateSettings(swap_gender=False), judge=(),
                         progress=lambda f, m="": seen.append(m))
    assert seen[0] == "counterbias: loading stub"
    assert "counterbias: 0/1 candidates, the first 1 under way" in seen
    assert seen[-1].startswith("counterbias: 1 candidates")

