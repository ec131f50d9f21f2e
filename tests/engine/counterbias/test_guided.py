"""Guided edits (CORE's editor and the LLM-only baseline) against a real loopback server."""

from __future__ import annotations

import re

import pytest

from engine.counterbias import candidate_rows
from engine.counterbias.guided import Guide, GuidedSettings, generate_guided, guided_problem
from engine.counterbias.settings import GenerationConfigError
from engine.llm.config import LLMConfig
from tests.engine.counterbias.scripted_llm import edit_sentence

MEMBERS = ["r:tiny-distilbert", "r:tiny-roberta", "r:tiny-mpnet"]


def _parts(body):
    user = [m["content"] for m in body["messages"] if m["role"] == "user"]
    guided = [u for u in user if u.startswith("Task:") and "\nText: " in u][-1]
    return user[-1], guided.split("\nText: ", 1)[1], guided


def test_llm_only_and_core_edits_are_stored_judged_and_resumable(voted_project, stub):
    project = voted_project
    dataset = project.dataset("reviews")
    prompts: list[str] = []

    def reply(body):
        last, text, guided = _parts(body)
        prompts.append(guided)
        if text.startswith("This is a truly"):
            return "Positive"  # a bare label, twice: recorded failure
        if last.startswith("That answer cannot be used"):
            return edit_sentence(text)  # the repair gives a real edit
        if text.startswith("I hate"):
            return "The movie review is positive."  # comments on the text: repaired once
        return f'Text: "{edit_sentence(text)}"'

    server = stub(reply=reply)
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0)
    ids = [int(r["id"]) for r in project.iter_examples(dataset.id)][:4]
    result = generate_guided(project, dataset.id, ids, config, settings=GuidedSettings(method="llm"), judge=MEMBERS)
    rows = {r["example_id"]: r for r in candidate_rows(project, dataset_id=dataset.id)}
    assert len(result.created) == 3 and len(result.failed) == 1
    texts = {i: r["text"] for i, r in rows.items()}
    hate = next(i for i in ids if project.examples([i])[0]["text"].startswith("I hate"))
    assert texts[hate] == "I love the movie." and rows[hate]["meta"]["repaired_from"].startswith("It is not the")
    failed = next(r for r in rows.values() if r["status"] == "failed")
    assert "only a label" in failed["meta"]["error"]["message"] and failed["meta"]["error"]["retriable"]
    made = [r for r in rows.values() if r["status"] == "proposed"]
    assert all(r["method"] == "llm" and r["meta"]["guide"] is None for r in made)
    assert all(set(r["scores"]["verdicts"]) >= {"label-flip", "copy", "commentary"} for r in made)
    assert all(r["scores"]["verdicts"]["copy"]["status"] == "pass" for r in made)
    assert all("No related texts" in p for p in prompts)

    # a rerun makes only the failed one again
    sent = server.count
    again = generate_guided(project, dataset.id, ids, config, settings=GuidedSettings(method="llm"), judge=MEMBERS)
    assert again.skipped == 3 and len(again.failed) == 1 and server.count == sent  # its answers are cached

    # CORE: the retrieved keywords and excerpts are in the prompt and stored with the candidate
    prompts.clear()
    first = ids[0]
    target = "Positive" if project.examples([first])[0]["label"] == "Negative" else "Negative"
    guides = {(first, target): Guide(excerpts=("A dazzling, generous film.", "I adored every minute."),
                                     keywords=("dazzling", "generous", "adored"))}
    core = generate_guided(project, dataset.id, [first], config, settings=GuidedSettings(method="core"),
                           guides=guides, judge=MEMBERS)
    assert len(core.created) + len(core.failed) == 1
    assert "Words from related texts: dazzling, generous, adored" in prompts[0]
    assert '"A dazzling, generous film."' in prompts[0]
    stored = [r for r in candidate_rows(project, dataset_id=dataset.id) if r["method"] == "core"][0]
    assert stored["meta"]["guide"] == {"excerpts": list(guides[(first, target)].excerpts),
                                       "keywords": ["dazzling", "generous", "adored"]}


def test_guided_edits_refuse_bad_settings_and_unusable_answers(voted_project, tmp_path):
    with pytest.raises(GenerationConfigError):
        GuidedSettings(method="magic")
    assert guided_problem("I'm sorry, but I can't rewrite this.", "A bad film.", ["Negative", "Positive"])
    assert re.search("copies", guided_problem(
        "Happily the banter between the two pilots felt quick and natural.", "A bad film.", ["Negative", "Positive"],
        __import__("engine.counterbias.leak", fromlist=["LeakGuard"]).LeakGuard.from_prompts(["edit_sentence"])))
