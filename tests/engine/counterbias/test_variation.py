"""Pattern-keeping counterfactuals (variation theory) against a real loopback OpenAI-compatible server."""

from __future__ import annotations

import csv
import re

import pytest

from engine.counterbias import candidate_rows
from engine.counterbias.settings import GenerationConfigError
from engine.counterbias.variation import VariationSettings, generate_variations
from engine.io import ImportOptions, import_file
from engine.llm.config import LLMConfig
from engine.patterns.store import store_patterns
from engine.patterns.scores import ScoredPattern
from engine.store import Project

REVIEWS = [
    ("Our waiter was rude and the night dragged on.", "service"),   # phrases, an edit that keeps the pattern
    ("The waiter was slow, so we left early.", "service"),          # first edit loses the pattern: repaired
    ("My waiter was grumpy all evening.", "service"),               # CANNOT
    ("The waiter was late with every plate.", "service"),           # phrases that do not match the pattern
    ("The soup tasted of nothing at all.", "food"),                  # no pattern of its label matches
]


@pytest.fixture
def project(tmp_path):
    src = tmp_path / "r.csv"
    with src.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows(REVIEWS)
    with Project.create(tmp_path / "vt.cbproj") as p:
        ds = import_file(p, src, options=ImportOptions(name="r")).dataset
        store_patterns(p, ds.id, [ScoredPattern("[waiter]+AUX+ADJ", "service", 1.0, 1.0, 1.0, 4, 4),
                                  ScoredPattern("[soup]+AUX+ADJ", "food", 1.0, 1.0, 1.0, 1, 1)])
    p = Project.open(tmp_path / "vt.cbproj")
    yield p
    p.close()


def reply(body):
    user = [m["content"] for m in body["messages"] if m["role"] == "user"]
    last = user[-1]
    if "Pattern: " in last:
        matched = re.search(r"Matched part: (.*)", last).group(1)
        if "grumpy" in matched:
            return "CANNOT"
        if "late" in matched:
            return "the bill | a long wait"
        return "1. waiter was pricey\n2. waiter is expensive\n3. waiter was cheap\n4. waiters overcharged"
    text = re.search(r"\nText: (.*)", [u for u in user if "\nText: " in u][-1]).group(1)
    if last.startswith("That answer cannot be used"):
        return text.replace("The waiter was slow", "The waiter was expensive")
    if "slow" in text:
        return "We paid far too much, so we left early."  # drops the pattern
    return text.replace("was rude", "was pricey")


def test_pattern_keeping_counterfactuals_stored_judged_resumable(project, stub):
    server = stub(reply=reply)
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0)
    ds = project.dataset("r")
    result = generate_variations(project, ds.id, None, config, settings=VariationSettings(targets="other"))
    assert result.no_pattern == 1 and result.cannot >= 1
    rows = candidate_rows(project, dataset_id=ds.id)
    by_text = {project.examples([r["example_id"]])[0]["text"]: r for r in rows}
    rude = by_text[REVIEWS[0][0]]
    assert rude["status"] == "proposed" and rude["text"] == "Our waiter was pricey and the night dragged on."
    assert rude["meta"]["pattern"] == "[waiter]+AUX+ADJ" and rude["meta"]["matched"] == "waiter was rude"
    assert rude["meta"]["phrases"] == ["waiter was pricey", "waiter is expensive", "waiter was cheap"]
    assert rude["scores"]["verdicts"]["pattern"]["status"] == "pass"
    slow = by_text[REVIEWS[1][0]]
    assert slow["text"] == "The waiter was expensive, so we left early."
    assert "no longer matches" in slow["meta"]["repaired_from"]
    grumpy = by_text[REVIEWS[2][0]]
    assert grumpy["status"] == "failed" and grumpy["meta"]["error"]["step"] == "cannot"
    assert not grumpy["meta"]["error"]["retriable"]
    late = by_text[REVIEWS[3][0]]
    assert late["status"] == "failed" and "None of the phrases" in late["meta"]["error"]["message"]
    assert REVIEWS[4][0] not in by_text

    sent = server.count
    again = generate_variations(project, ds.id, None, config, settings=VariationSettings(targets="other"))
    assert again.skipped == len(result.created) and server.count == sent  # failures retried from the cache


def test_explicit_patterns_and_bad_settings(project, stub):
    server = stub(reply=reply)
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0)
    ds = project.dataset("r")
    first = [int(r["id"]) for r in project.iter_examples(ds.id)][0]
    result = generate_variations(project, ds.id, [first], config, patterns={first: "[waiter]+*+ADJ"},
                                 settings=VariationSettings(seed=3))
    made = [r for r in candidate_rows(project, dataset_id=ds.id) if r["id"] in result.created]
    assert made and made[0]["meta"]["pattern"] == "[waiter]+*+ADJ"
    with pytest.raises(GenerationConfigError):
        VariationSettings(phrases=0)


def test_cli_vt_generate(project, stub, capsys):
    import json

    from engine.cli import main

    server = stub(reply=reply)
    path = str(project.path)
    project.close()
    argv = ["-q", "vt-generate", path, "r", "--backend", "openai", "--model", "stub", "--base-url", server.base_url]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["created"] == 2 and out["no_pattern"] == 1 and out["pattern_keeping_rate"] == 1.0
    assert {f["step"] for f in out["failures"]} == {"cannot", "edit"}
    assert main([*argv, "--pattern", "[waiter+ADJ"]) == 3
    assert main(["-q", "vt-generate", path, "r", "--backend", "openai", "--model", "stub", "--base-url",
                 "http://127.0.0.1:9/v1", "--pattern", "[waiter]+AUX+ADJ", "--seed", "99"]) == 3
    err = capsys.readouterr().err
    assert "CB971" in err and "Traceback" not in err


def test_a_short_simple_pattern_is_chosen_over_a_long_match_of_about_the_same_f1(project):
    """A long review: a '*' pattern spans most of it; a two-element pattern of almost the same F1 matches
    five words. The short one is the one the LLM is asked to keep; a much weaker one is never preferred."""
    from engine.counterbias.variation import patterns_for
    from engine.patterns.match import Matcher

    ds = project.datasets()[0]
    long_review = ("The waiter greeted us warmly and then, after a very long wait in which the kitchen seemed to "
                   "forget us and nobody came by, the food finally arrived cold and the waiter was rude.")
    store_patterns(project, ds.id, [
        ScoredPattern("[greet]+*+[rude]", "food", 0.9, 0.9, 0.95, 2, 2),          # best F1, spans ~30 words
        ScoredPattern("[waiter]+AUX+[rude]", "food", 0.9, 0.85, 0.9, 2, 2),         # short span, 3 elements
        ScoredPattern("[waiter]+AUX", "food", 0.5, 0.5, 0.5, 2, 1),                 # simpler, far weaker
    ])
    chosen = patterns_for(project, ds.id, {1: {"text": long_review, "label": "food"}}, Matcher(soft="forms"))
    pattern, span = chosen[1]
    assert pattern == "[waiter]+AUX+[rude]" and span == "waiter was rude"
    # the analyst's own pattern wins whenever it matches
    store_patterns(project, ds.id, [ScoredPattern("[greet]+*+[warmly]", "food", 0.7, 0.7, 0.7, 1, 1)],
                   source="analyst")
    assert patterns_for(project, ds.id, {1: {"text": long_review, "label": "food"}},
                        Matcher(soft="forms"))[1][0] == "[greet]+*+[warmly]"


PAIRS = [
    ("A man in a red cap naps on a park bench.", "A man is sleeping outside.", "entailment"),   # pattern kept
    ("Three girls splash in a fountain.", "The girls are dry indoors.", "contradiction"),       # no pattern: plain edit
]


def pair_reply(body):
    user = [m["content"] for m in body["messages"] if m["role"] == "user"]
    if "Pattern: " in user[-1]:
        return "man is running | man is awake"
    asked = [u for u in user if "\nHypothesis: " in u][-1]
    premise = re.search(r"\nPremise: (.*)", asked).group(1)
    hypothesis = re.search(r"\nHypothesis: (.*)", asked).group(1)
    assert premise in {p for p, _, _ in PAIRS}  # the premise is given as the context, unchanged
    if "Phrases: " in asked:
        return hypothesis.replace("man is sleeping", "man is running")
    assert "Wanted label: entailment (the premise makes the new hypothesis certainly true)" in asked
    if user[-1].startswith("That answer cannot be used"):
        assert "repeats the premise" in user[-1]
        return "Hypothesis: " + hypothesis.replace("are dry", "are wet")
    return premise  # copies the premise: repaired once


@pytest.fixture
def pair_project(tmp_path):
    src = tmp_path / "nli.csv"
    with src.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["premise", "hypothesis", "label"])
        w.writerows(PAIRS)
    with Project.create(tmp_path / "nli.cbproj") as p:
        ds = import_file(p, src, options=ImportOptions(name="nli")).dataset
        assert ds.task == "pair"
        store_patterns(p, ds.id, [ScoredPattern("[man]+AUX+VERB", "entailment", 1.0, 1.0, 1.0, 1, 1)])
    p = Project.open(tmp_path / "nli.cbproj")
    yield p
    p.close()


def test_pairs_edit_the_hypothesis_and_keep_the_premise(pair_project, stub):
    """Of a premise/hypothesis pair the hypothesis carries the pattern and is edited (pattern-keeping, or a plain
    edit where no pattern matches); the premise is shown as context and stored byte-identical."""
    from engine.active.counterfactuals import VariationCounterfactuals

    server = stub(reply=pair_reply)
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0)
    ds = pair_project.dataset("nli")
    ids = [int(r["id"]) for r in pair_project.iter_examples(ds.id)]
    source = VariationCounterfactuals(pair_project, ds.id, config, settings=VariationSettings(targets="contradiction"))
    try:
        got = source(ids)
    finally:
        source.close()
    assert got[ids[0]] == [((PAIRS[0][0], "A man is running outside."), "contradiction")]
    rows = {r["example_id"]: r for r in candidate_rows(pair_project, dataset_id=ds.id)}
    vt = rows[ids[0]]
    assert vt["method"] == "vt" and vt["text"] is None and vt["premise"] == PAIRS[0][0]
    assert vt["meta"]["generated"] == {"hypothesis": "A man is running outside."}
    assert vt["meta"]["matched"] == "man is sleeping" and vt["scores"]["verdicts"]["pattern"]["status"] == "pass"
    assert set(vt["meta"]["edit_distance"]) == {"hypothesis"}
    # the second pair has no pattern of its label and no target of its own label: nothing for it
    assert ids[1] not in got and ids[1] not in rows

    from engine.counterbias.guided import GuidedSettings, generate_guided

    made = generate_guided(pair_project, ds.id, [ids[1]], config, settings=GuidedSettings(method="llm",
                                                                                          targets="entailment"))
    plain = next(r for r in candidate_rows(pair_project, dataset_id=ds.id) if r["id"] in made.created)
    assert (plain["premise"], plain["hypothesis"]) == (PAIRS[1][0], "The girls are wet indoors.")
    assert plain["text"] is None and plain["meta"]["generated"] == {"hypothesis": "The girls are wet indoors."}
    assert plain["meta"]["repaired_from"] == "It repeats the premise instead of editing the hypothesis."


def test_generate_method_vt_is_the_vt_generate_verb(project, stub, capsys):
    import json

    from engine.cli import main
    from engine.cli import build_parser

    server = stub(reply=reply)
    path = str(project.path)
    project.close()
    llm = ["--backend", "openai", "--model", "stub", "--base-url", server.base_url]
    assert main(["-q", "generate", path, "r", "--method", "vt", *llm]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "vt" and out["created"] == 2 and out["pattern_keeping_rate"] == 1.0
    assert main(["-q", "vt-generate", path, "r", *llm]) == 0  # the alias: everything made, nothing new
    again = json.loads(capsys.readouterr().out)
    assert again["created"] == 0 and again["skipped"] >= 2
    verbs = build_parser()._subparsers._group_actions[0].choices
    options = {name: sorted(a.dest for a in verbs[name]._actions) for name in ("generate", "core", "vt-generate")}
    assert options["generate"] == options["vt-generate"] == [d for d in options["core"] if d != "llm_only"]
