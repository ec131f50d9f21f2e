"""The heuristic checks on answers the bundled models really gave (tests/fixtures/llm_outputs).

``rewrites/`` holds 20 answers of SmolLM2-135M and Qwen2.5-Coder-0.5B to a zero-shot request to
rewrite a CAD review toward the other label; ``rewrites/expected.json`` names the failure modes
each answer shows, read by hand against the raw answer (the models mostly describe the review
instead of rewriting it, name only the label, or hand back the review). The triple prompt's
zero-shot answers add real field echoes ("Subject: …"), bulleted lists and verbatim copies.
No recorded answer is a refusal: those cases are written by hand (marked below).
"""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

from engine.verification import checks, heuristics
from engine.verification.checks import CHECKS, Subject, run_checks

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "llm_outputs"
LABELS = ["Negative", "Positive"]
HEURISTIC = ("prompt-echo", "refusal", "bare-label", "label-named", "commentary", "formatting", "truncation", "copy",
             "repetition")


def _heuristics(new: str, original: str, finish_reason: str | None = None) -> list[str]:
    found = {
        "prompt-echo": heuristics.prompt_echo(new, original),
        "refusal": heuristics.refusal(new, original),
        "bare-label": heuristics.bare_label(new, original, LABELS),
        "label-named": heuristics.label_named(new, original, LABELS),
        "commentary": heuristics.commentary(new, original),
        "formatting": heuristics.formatting(new, original),
        "truncation": heuristics.truncation(new, original, finish_reason=finish_reason),
        "copy": heuristics.copy(new, original),
        "repetition": heuristics.repetition(new, original),
    }
    return sorted(name for name, reason in found.items() if reason)


def _rewrite_cases():
    cases = json.loads((FIXTURES / "rewrites/cases.json").read_text(encoding="utf-8"))
    expected = json.loads((FIXTURES / "rewrites/expected.json").read_text(encoding="utf-8"))
    for case in cases:
        for model, out in case["outputs"].items():
            key = f"{case['case']}/{model}"
            yield pytest.param(case["original"], (FIXTURES / "rewrites" / out["file"]).read_text(encoding="utf-8"),
                               out["finish_reason"], expected[key], id=key)


@pytest.mark.parametrize(("original", "answer", "finish", "expected"), list(_rewrite_cases()))
def test_recorded_rewrite_answers(original, answer, finish, expected):
    assert _heuristics(answer, original, finish) == expected


def test_recorded_answers_cover_the_failure_modes():
    expected = json.loads((FIXTURES / "rewrites/expected.json").read_text(encoding="utf-8"))
    seen = {name for names in expected.values() for name in names}
    assert {"bare-label", "commentary", "truncation", "repetition"} <= seen
    assert sum(not names for names in expected.values()) >= 5  # real rewrites pass every heuristic


def _triple_answer(model: str, case: str) -> tuple[str, str]:
    cases = {c["case"]: c["sentence"] for c in json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))}
    return (FIXTURES / model / "zeroshot" / f"{case}.txt").read_text(encoding="utf-8"), cases[case]


@pytest.mark.parametrize(("model", "case"), [("qwen2.5-coder-0.5b", "c02"), ("qwen2.5-coder-0.5b", "c05"),
                                             ("qwen2.5-coder-0.5b", "c10"), ("smollm2-135m", "c08"),
                                             ("smollm2-135m", "c12")])
def test_recorded_verbatim_copies(model, case):
    answer, sentence = _triple_answer(model, case)
    assert heuristics.copy(answer, sentence) == "same words as the original"


@pytest.mark.parametrize("case", ["c01", "c04", "c09", "c10", "c11"])
def test_recorded_field_echoes(case):
    answer, sentence = _triple_answer("smollm2-135m", case)
    assert heuristics.prompt_echo(answer, sentence) == 'echoes "Subject:"'


@pytest.mark.parametrize("case", ["c05", "c07"])
def test_recorded_bulleted_lists(case):
    answer, sentence = _triple_answer("smollm2-135m", case)
    assert heuristics.formatting(answer, sentence) == "a bulleted list"


# Hand-written: no recorded answer of the bundled models refuses.
@pytest.mark.parametrize("answer", [
    "I'm sorry, but I can't help with rewriting this review.",
    "As an AI language model, I cannot express personal opinions about films.",
    "I apologize, but I am unable to create content like this.",
])
def test_refusals(answer):
    assert heuristics.refusal(answer, "A gripping, well acted thriller.")


@pytest.mark.parametrize(("new", "original"), [
    ("I'm sorry I wasted two hours on it.", "I'm sorry I missed it in cinemas; two wonderful hours."),
    ("A dreadful film. I am not able to recommend it.", "A fine film. I am able to recommend it."),
])
def test_a_review_that_apologises_is_not_a_refusal(new, original):
    assert heuristics.refusal(new, original) is None


def test_real_minimal_edits_pass_every_heuristic(shared_data):
    """The CAD editors' revisions (the gold standard of an edit) almost never trip a heuristic.

    Of the 1,952 dev + train pairs, 16 do (0.8 %): two revisions that are the original again
    (CAD's own errors), two that start with an apology, three whose last sentence was cut, one
    that names a label, and eight that repeat a run of six words the original said once (mostly
    film titles: "A River Runs Through It is a").
    """
    import csv

    flagged, total = {}, 0
    for split in ("dev", "train"):
        with open(shared_data / f"cad/sentiment/combined/paired/{split}_paired.tsv", newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        for i in range(0, len(rows) - 1, 2):
            total += 1
            found = _heuristics(rows[i + 1]["Text"], rows[i]["Text"])
            if found:
                flagged[f"{split}:{i}"] = found
    assert total > 1900
    assert len(flagged) <= 0.01 * total, flagged


def test_checks_turn_heuristics_into_verdicts():
    from engine.counterbias.verify import CandidateFilter

    subject = Subject(original={"text": "A great, moving film."}, new={"text": "Label: Negative"}, labels=LABELS,
                      target="Negative", original_label="Positive")
    verdicts = run_checks(subject, CandidateFilter())
    assert list(verdicts) == CHECKS.names()
    assert verdicts["bare-label"].status == "fail" and "Negative" in verdicts["bare-label"].reason
    assert verdicts["label-flip"].status == "skip"  # no ensemble judged it
    assert verdicts["pattern"].status == "skip" and verdicts["llm-judge"].status == "skip"
    good = Subject(original={"text": "A great, moving film."}, new={"text": "A dull, lifeless film."}, labels=LABELS,
                   target="Negative", original_label="Positive")
    assert {n: v.status for n, v in run_checks(good, CandidateFilter(), HEURISTIC).items()} == dict.fromkeys(
        HEURISTIC, "pass")


def test_the_doctests_hold():
    for module in (heuristics, checks):
        assert doctest.testmod(module).failed == 0


def test_label_judged_needs_a_check_that_reads_the_label():
    from engine.verification.checks import label_judged

    form_only = {"refusal": {"status": "pass"}, "copy": {"status": "pass"}, "label-flip": {"status": "skip"},
                 "llm-judge": {"status": "skip"}}
    assert not label_judged(form_only)
    assert label_judged({**form_only, "label-flip": {"status": "fail"}})
    assert label_judged({**form_only, "llm-judge": {"status": "pass"}})
    assert not label_judged({})


@pytest.mark.parametrize(("new", "original", "labels", "named"), [
    ("The acting is 'very negative' and the plot thin.", "The acting is fine.", ["very negative", "negative"], True),
    ("A dull, slow film (negative).", "A fine film.", ["negative", "positive"], True),
    ("Dull and slow. Rated as negative.", "A fine film.", ["negative", "positive"], True),
    ("The entailment holds: a man sleeps.", "A man runs.", ["entailment", "contradiction"], False),
    ("I have nothing positive to say about it.", "A fine film.", ["negative", "positive"], False),
    ("The reviews were very negative at first.", "The reviews were very negative at first!", ["very negative"], False),
    ("I rated it 1 out of 10.", "I rated it 9 out of 10.", ["1", "2"], False),
    # a labelling noun after the label: the model's own comment, seen in a CAD edit
    ("Played with wit and quiet intensity, which is a negative sentiment.", "Played with wit and quiet intensity.",
     ["Negative", "Positive"], True),
    ("A positive tone throughout.", "A positive tone throughout, sadly.", ["Negative", "Positive"], False),
])
def test_label_named(new, original, labels, named):
    assert (heuristics.label_named(new, original, labels) is not None) is named


def test_coined_word_check_reads_the_dataset_vocabulary():
    from engine.counterbias.verify import CandidateFilter
    from engine.text.lexicon import english_words

    if english_words() is None:
        pytest.skip("pyspellchecker is not installed")
    new, original = {"text": "The villain whitemailed the mayor."}, {"text": "The villain blackmailed the mayor."}
    subject = Subject(original=original, new=new, labels=LABELS, target="Negative", original_label="Positive")
    verdict = run_checks(subject, CandidateFilter(), ["coined-word"])["coined-word"]
    assert verdict.status == "fail" and verdict.reason == 'made-up word "whitemailed"'
    assert "coined-word" in CandidateFilter().required()
    slang = Subject(original=original, new=new, labels=LABELS, target="Negative", original_label="Positive",
                    vocabulary=frozenset({"whitemailed"}))
    assert run_checks(slang, CandidateFilter(), ["coined-word"])["coined-word"].status == "pass"


def test_repetition_flags_a_clause_said_twice_but_not_the_originals_own():
    # SmolLM2's recorded rewrite r02 says its first sentence again at the end
    doubled = ("The film's second half is not only uninspiring but also a travesty. This is a film that has been "
               "robbed of its moral foundation. The movie's second half is not only uninspiring but also a travesty.")
    assert heuristics.repetition(doubled, "The second half is a joy.") == 'says "second half is not only uninspiring" twice'
    chant = "Run, Lola, run, Lola, run, Lola, run."
    assert heuristics.repetition(chant, chant) is None
    # five words again: parallel phrasing, as human editors write it
    assert heuristics.repetition("It is not the only one that has talent and not the only one that is good.",
                                 "It is the only one.") is None
    from engine.counterbias.verify import CandidateFilter

    subject = Subject(original={"text": "The second half is a joy."}, new={"text": doubled}, labels=LABELS,
                      target="Negative", original_label="Positive")
    verdict = run_checks(subject, CandidateFilter(), ["repetition"])["repetition"]
    assert verdict.status == "fail" and "twice" in verdict.reason
    assert "repetition" in CandidateFilter().required()


def test_a_new_hypothesis_that_talks_about_the_pair_is_commentary():
    """Recorded from the bundled 1.5B model editing a CAD NLI hypothesis toward entailment (stop 45)."""
    original = "Two young boys are playing a game."
    assert heuristics.commentary("The hypothesis states that two young boys are playing a game.", original)
    assert heuristics.commentary("The premise implies that the boys are outside.", original)
    assert heuristics.commentary("Two young boys are playing in the sand.", original) is None
