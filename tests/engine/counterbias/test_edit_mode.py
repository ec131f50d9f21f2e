"""Edit-preserving generation (the default mode) against the scripted loopback LLM server.

A real project file with the tiny trained ensemble; a dataset of multi-sentence reviews whose
principal/spurious words are stored as a vote set by hand, so that which sentence holds the
principal triple is known. Checks: untouched sentences stay byte-identical, dropped spurious
words are caught and repaired (or recorded as a failure), prompt leaks are refused, a half
flip is repaired once, and the reconstruct mode still works with the same checks.
"""

from __future__ import annotations

import csv
import json

import pytest

from engine.counterbias import GenerateSettings, candidate_rows, generate_counterbias
from engine.counterbias.leak import LeakGuard
from engine.llm.config import LLMConfig
from engine.llm.prompts import load_prompt
from engine.store.schema import now
from engine.text.sentences import split_sentences
from tests.engine.counterbias.scripted_llm import edit_sentence, scripted_reply, sentence_to_edit

#: Written for this test: the middle sentence holds the principal word ("great").
REVIEW = "I watched it with my brother on Friday.  The plot is great and the music is lovely.\n\nThe cinema was cold."
TARGET = "The plot is great and the music is lovely."


def _dataset_with_vote(project, tmp_path, principal=("great",), spurious=("plot", "brother"), review=REVIEW,
                       more=()):
    from engine.io import ImportOptions, import_file

    src = tmp_path / "multi.csv"
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerow([review, "Positive"])
        w.writerow(["Nothing else to see.", "Negative"])  # a second class (not generated for)
        w.writerows(more)
    dataset = import_file(project, src, options=ImportOptions(name="multi")).dataset
    example_id = int(next(iter(project.iter_examples(dataset.id)))["id"])

    def store(conn):
        cursor = conn.execute("INSERT INTO vote_sets (vote_key, dataset_id, params, created_at) VALUES (?, ?, ?, ?)",
                              ("hand-made", dataset.id, json.dumps({"models": []}), now()))
        conn.execute(
            "INSERT INTO word_votes (vote_set_id, example_id, field, principal, spurious, votes, member_words, "
            "created_at) VALUES (?, ?, 'text', ?, ?, ?, '{}', ?)",
            (cursor.lastrowid, example_id, json.dumps(list(principal)), json.dumps(list(spurious)),
             json.dumps({**{w: 3 for w in principal}, **{w: 1 for w in spurious}}), now()))

    project.writer.run(store)
    return project.dataset("multi")


def _run(project, server, **settings):
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url)
    dataset = project.dataset("multi")
    first = [int(next(iter(project.iter_examples(dataset.id)))["id"])]
    result = generate_counterbias(project, dataset.id, first, config, settings=GenerateSettings(**settings), judge=())
    return result, candidate_rows(project, dataset_id=dataset.id)


def _editing(body) -> bool:
    return sentence_to_edit(body) is not None


def test_edit_mode_sends_no_triple_request_unless_asked(voted_project, stub, tmp_path):
    _dataset_with_vote(voted_project, tmp_path)
    sent = []
    server = stub(reply=lambda body: sent.append(body) or scripted_reply(body))
    facts = lambda: [b for b in sent if "You extract facts" in b["messages"][0]["content"]]  # noqa: E731
    result, rows = _run(voted_project, server, swap_gender=False)
    assert len(result.created) == 1 and not facts()
    assert rows[0]["meta"]["fields"][0]["triples"] == []
    edited = REVIEW.replace(TARGET, "The plot is awful and the music is lovely.")
    assert rows[0]["text"] == edited  # chosen by its principal word, as with triples
    result, rows = _run(voted_project, server, swap_gender=False, edit_triples=True)
    assert len(result.created) == 1 and len(facts()) == len(split_sentences(REVIEW))  # one request per sentence
    with_triples = next(r for r in rows if r["id"] == result.created[0])
    assert with_triples["meta"]["fields"][0]["triples"] and with_triples["text"] == edited


def test_untouched_sentences_stay_byte_identical(voted_project, stub, tmp_path):
    _dataset_with_vote(voted_project, tmp_path)
    sent = []
    server = stub(reply=lambda body: sent.append(body) or scripted_reply(body))
    result, rows = _run(voted_project, server, swap_gender=False)
    assert len(result.created) == 1, rows[0]["meta"]["error"]
    row = rows[0]
    assert row["text"] == REVIEW.replace(TARGET, "The plot is awful and the music is lovely.")
    assert [s for s in split_sentences(row["text"]) if s != "The plot is awful and the music is lovely."] == [
        "I watched it with my brother on Friday.", "The cinema was cold."]
    edits = [b for b in sent if _editing(b)]
    assert len(edits) == 1 and sentence_to_edit(edits[0]) == TARGET  # one request, for that sentence only
    assert ("Context, not to be copied: I watched it with my brother on Friday. [SENTENCE] The cinema was cold."
            in edits[0]["messages"][-1]["content"])
    meta = row["meta"]
    assert meta["mode"] == "edit" and meta["repairs"] == {}
    # the sentence reads as Positive: its opinion words (the LLM's marking) are named to change
    assert meta["fields"][0]["edits"][0]["keep"] == ["plot"]
    assert meta["fields"][0]["edits"][0]["change"] == meta["fields"][0]["edits"][0]["opinion"] == ["great", "lovely"]
    assert meta["edit_distance"]["text"] == pytest.approx(1 / 21, abs=1e-3)


def test_gender_swap_reaches_every_sentence(voted_project, stub, tmp_path):
    _dataset_with_vote(voted_project, tmp_path)
    server = stub(reply=scripted_reply)
    result, rows = _run(voted_project, server)
    assert len(result.created) == 1
    assert rows[0]["text"] == ("I watched it with my sister on Friday.  The plot is awful and the music is lovely."
                               "\n\nThe cinema was cold.")


def _dropping(first, then):
    """A reply that answers the first edit request with ``first(sentence)`` and every repair with ``then``."""
    def reply(body):
        if not _editing(body):
            return scripted_reply(body)
        sentence = sentence_to_edit(body)
        repairing = "cannot be used" in body["messages"][-1]["content"]
        return (then if repairing else first)(sentence)
    return reply


def test_dropped_spurious_word_is_repaired(voted_project, stub, tmp_path):
    _dataset_with_vote(voted_project, tmp_path)
    sent = []
    reply = _dropping(lambda s: edit_sentence(s).replace("plot", "story"), edit_sentence)
    server = stub(reply=lambda body: sent.append(body) or reply(body))
    result, rows = _run(voted_project, server, swap_gender=False)
    assert len(result.created) == 1
    assert "The plot is awful" in rows[0]["text"]
    assert rows[0]["meta"]["repairs"] == {"edit": 1}
    assert rows[0]["meta"]["fields"][0]["edits"][0]["problems"] == ["missing words"]
    repairs = [b for b in sent if "cannot be used" in b["messages"][-1]["content"]]
    assert len(repairs) == 1 and '"plot"' in repairs[0]["messages"][-1]["content"]


def test_spurious_word_dropped_twice_is_a_recorded_failure(voted_project, stub, tmp_path):
    _dataset_with_vote(voted_project, tmp_path)
    drop = lambda s: edit_sentence(s).replace("plot", "story")  # noqa: E731
    server = stub(reply=_dropping(drop, drop))
    # without the phrase swap, which would replace the marked "great" and "lovely" and keep "plot"
    result, rows = _run(voted_project, server, swap_gender=False, edit_swap=False)
    assert not result.created and len(result.failed) == 1
    error = rows[0]["status"] == "failed" and rows[0]["meta"]["error"]
    assert error["reason"] == "missing words" and '"plot"' in error["message"] and error["retriable"]
    assert rows[0]["meta"]["fields"][0]["edits"][0]["raw"] and rows[0]["text"] is None


def test_a_sentence_unusable_twice_gets_one_fresh_try(voted_project, stub, tmp_path):
    """Edit and repair repeat the sentence; a fresh try with a new seed (no repair conversation), asked with the
    stronger prompt (the first one moved nothing twice), gives a usable edit, which is taken."""
    _dataset_with_vote(voted_project, tmp_path)
    sent = []

    def reply(body):
        sent.append(body)
        if not _editing(body):
            return scripted_reply(body)
        return edit_sentence(sentence_to_edit(body)) if body.get("seed") == 13 + 500 else sentence_to_edit(body)

    server = stub(reply=reply)
    result, rows = _run(voted_project, server, swap_gender=False)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    assert rows[0]["text"] == REVIEW.replace(TARGET, "The plot is awful and the music is lovely.")
    edit = rows[0]["meta"]["fields"][0]["edits"][0]
    assert edit["problems"] == ["unchanged", "unchanged"] and edit["failure"] is None and len(edit["raw"]) == 3
    assert rows[0]["meta"]["repairs"] == {"edit": 1, "fresh": 1, "strong": 1}
    fresh = [b for b in sent if _editing(b) and b.get("seed") == 513]
    assert len(fresh) == 1 and fresh[0]["temperature"] >= 0.7
    first = [b for b in sent if _editing(b)][0]["messages"]
    assert fresh[0]["messages"][0] == _STRONG_SYSTEM and fresh[0]["messages"][-1] == first[-1]  # same data


_STRONG_SYSTEM = load_prompt("edit_sentence_strong").render(
    **{k: "" for k in ("task", "labels", "before", "after", "label", "target", "sentence", "change", "keep")})[0]


def test_a_word_dropped_twice_gets_the_first_request_again(voted_project, stub, tmp_path):
    """A sentence whose edits dropped a word to keep is not sent to the stronger prompt (a freer rewrite drops
    more): its fresh try is the first request with a new seed."""
    _dataset_with_vote(voted_project, tmp_path)
    sent = []
    drop = lambda s: edit_sentence(s).replace("plot", "story")  # noqa: E731

    def reply(body):
        sent.append(body)
        return drop(sentence_to_edit(body)) if _editing(body) else scripted_reply(body)

    _run(voted_project, stub(reply=reply), swap_gender=False)
    editing = [b for b in sent if _editing(b)]
    fresh = [b for b in editing if b.get("seed") == 513]
    assert len(fresh) == 1 and fresh[0]["messages"] == editing[0]["messages"]


def test_edit_fresh_off_sends_no_third_request(voted_project, stub, tmp_path):
    _dataset_with_vote(voted_project, tmp_path)
    sent = []
    server = stub(reply=lambda body: sent.append(body) or (sentence_to_edit(body) if _editing(body)
                                                           else scripted_reply(body)))
    result, rows = _run(voted_project, server, swap_gender=False, edit_fresh=False, edit_swap=False)
    assert not result.created and rows[0]["meta"]["error"]["reason"] == "unchanged"
    assert sum(_editing(b) for b in sent) == 2


LEAK = "The lighthouse scenes look murky, and Ingrid's cello theme drags down every chase."


def test_prompt_leak_is_refused_then_repaired(voted_project, stub, tmp_path):
    _dataset_with_vote(voted_project, tmp_path)
    server = stub(reply=_dropping(lambda s: f"The plot is awful. {LEAK}", edit_sentence))
    result, rows = _run(voted_project, server, swap_gender=False)
    assert len(result.created) == 1 and "lighthouse" not in rows[0]["text"]
    assert rows[0]["meta"]["fields"][0]["edits"][0]["problems"] == ["prompt leak"]


def test_prompt_leak_twice_fails_with_its_reason(voted_project, stub, tmp_path):
    _dataset_with_vote(voted_project, tmp_path)
    leak = lambda s: s.replace("great", "murky") + " " + LEAK  # noqa: E731
    server = stub(reply=_dropping(leak, leak))
    result, rows = _run(voted_project, server, swap_gender=False, edit_swap=False)  # no phrase swap to rescue it
    assert len(result.failed) == 1 and rows[0]["meta"]["error"]["reason"] == "prompt leak"


def test_a_made_up_word_is_refused_then_repaired(voted_project, stub, tmp_path):
    """The bundled model once turned "blackmailed" into "whitemailed": a new word in no English word list and in
    no text of the dataset is sent back once, named, and the repair is taken."""
    _dataset_with_vote(voted_project, tmp_path)
    sent = []
    reply = _dropping(lambda s: s.replace("great", "grotsome"), edit_sentence)
    server = stub(reply=lambda body: sent.append(body) or reply(body))
    result, rows = _run(voted_project, server, swap_gender=False)
    assert len(result.created) == 1 and "grotsome" not in rows[0]["text"] and "The plot is awful" in rows[0]["text"]
    assert rows[0]["meta"]["fields"][0]["edits"][0]["problems"] == ["coined word"]
    repairs = [b for b in sent if "cannot be used" in b["messages"][-1]["content"]]
    assert len(repairs) == 1 and '"grotsome" is not an English word' in repairs[0]["messages"][-1]["content"]


def test_a_word_of_the_dataset_is_not_made_up(voted_project, stub, tmp_path):
    """Slang the dataset's texts use (in two of them) counts as a word, though no dictionary lists it."""
    _dataset_with_vote(voted_project, tmp_path, more=[("Utterly grotsome.", "Negative"),
                                                       ("A grotsome mess.", "Negative")])
    server = stub(reply=_dropping(lambda s: s.replace("great", "grotsome"), edit_sentence))
    result, rows = _run(voted_project, server, swap_gender=False, edit_moved=0)  # three rows say little of "moved"
    assert len(result.created) == 1 and "The plot is grotsome" in rows[0]["text"]
    assert rows[0]["meta"]["fields"][0]["edits"][0]["problems"] == []
    from engine.counterbias import judge_candidates

    assert judge_candidates(voted_project, result.created, [])[result.created[0]]["verdicts"]["coined-word"] == {
        "status": "pass", "reason": ""}


def test_leak_guard_reads_the_prompt_examples():
    guard = LeakGuard.from_prompts(["edit_sentence"])
    assert guard.find(f"Nice film. {LEAK}") is not None
    assert guard.find("she said the lighthouse scenes look murky and ingrid's cello theme drags on") is not None  # 6-gram
    assert guard.find("The lighthouse was lovely.") is None
    assert guard.find(LEAK, original=LEAK) is None  # the original's own words never count


def test_edit_mode_guards_the_stronger_prompt_examples_too():
    from engine.counterbias.leak import LEAK_SOURCES

    guard = LeakGuard.from_prompts(LEAK_SOURCES["edit"])
    assert guard.find("Fine. Two hours I would gladly live again - leave the house and go see it!") is not None
    assert guard.find(f"Nice film. {LEAK}") is not None
    # and the phrase swap's: an answer copied from its examples is a leak
    assert guard.find("Honestly, I stayed glued to my seat until the ending of it.") is not None


def test_reconstruct_mode_checks_spurious_words(voted_project, stub, tmp_path):
    _dataset_with_vote(voted_project, tmp_path)
    server = stub(reply=scripted_reply)
    result, rows = _run(voted_project, server, mode="reconstruct", drop_prob=0.0, swap_gender=False)
    row = rows[0]
    assert row["meta"]["mode"] == "reconstruct"
    if row["status"] == "failed":  # the scripted reconstruction may lose a word: then it is named
        assert row["meta"]["error"]["reason"] in {"missing words", "unusable"}
    else:
        assert "plot" in row["text"].lower() and "edit_distance" in row["meta"]


def test_a_sentence_that_cannot_be_edited_stays_and_the_candidate_is_kept(voted_project, stub, tmp_path):
    # two sentences hold principal words; the LLM edits one and returns the other unchanged (edit, repair, fresh try)
    # (no opinion-word marking: with it, "The cinema was cold.", read as none and marked none, is not sent at all)
    _dataset_with_vote(voted_project, tmp_path, principal=("great", "cold"))
    cold = "The cinema was cold."
    server = stub(reply=_dropping(lambda s: s if s == cold else edit_sentence(s),
                                  lambda s: s if s == cold else edit_sentence(s)))
    result, rows = _run(voted_project, server, swap_gender=False, edit_opinion=False)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    assert rows[0]["text"] == REVIEW.replace(TARGET, "The plot is awful and the music is lovely.")  # cold one verbatim
    edits = {e["sentence"]: e for e in rows[0]["meta"]["fields"][0]["edits"]}
    assert edits[cold]["new"] is None and edits[cold]["problems"] == ["unchanged"] * 3
    assert "Sentence 3" in edits[cold]["failure"] and edits[TARGET]["failure"] is None


def test_sentences_the_ensemble_reads_as_the_original_label_are_edited_too(voted_project, stub, tmp_path):
    """``edit_polar``: a sentence without a principal word is edited when the members, reading it alone,
    give it the original label with at least that probability (here the tiny members' ~0.5)."""
    project = voted_project
    dataset = _dataset_with_vote(project, tmp_path)
    server = stub(reply=scripted_reply)
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url)
    first = [int(next(iter(project.iter_examples(dataset.id)))["id"])]
    members = ["r:tiny-distilbert", "r:tiny-roberta", "r:tiny-mpnet"]

    def edited(threshold):
        settings = GenerateSettings(edit_polar=threshold, swap_gender=False,
                                    sentence_reader="members")
        generate_counterbias(project, dataset.id, first, config, judge=members, settings=settings)
        rows = [r for r in candidate_rows(project, dataset_id=dataset.id)
                if r["meta"].get("settings_key") == settings.key()]
        plan = rows[0]["meta"]["fields"][0]
        return plan["polar"], sorted(e["index"] for e in plan["edits"])

    assert edited(0.0) == ([], [1])  # off: only the sentence holding the principal word
    assert edited(0.99) == ([], [1])  # no sentence is read that surely as Positive by the tiny members
    polar, indices = edited(0.01)
    assert polar == [0, 1, 2] and indices == [0, 1, 2]


def test_the_llm_edits_the_sentence_as_written_and_the_swap_follows(voted_project, stub, tmp_path):
    # "Friday" is principal, so the sentence holding "brother" is edited (the opinion-word marking off: with it,
    # that sentence, read and marked as none, stays as written): the LLM sees "brother" (a small
    # model asked to copy a swapped "sister" wrote "brother" back), the candidate reads "sister"
    _dataset_with_vote(voted_project, tmp_path, principal=("great", "Friday"), spurious=("plot",))
    sent = []
    server = stub(reply=lambda body: sent.append(body) or scripted_reply(body))
    result, rows = _run(voted_project, server, edit_opinion=False)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    asked = {sentence_to_edit(b) for b in sent if _editing(b)}
    assert "I watched it with my brother on Friday." in asked
    assert all("sister" not in b["messages"][-1]["content"] for b in sent if _editing(b))
    edits = {e["index"]: e for e in rows[0]["meta"]["fields"][0]["edits"]}
    assert "brother" in edits[0]["keep"] and "brother" in edits[0]["answer"] and "sister" in edits[0]["new"]
    assert "my sister" in rows[0]["text"] and "brother" not in rows[0]["text"]


def _lexicon_polar(project, members, token):
    """A stand-in for the members reading sentences alone: P(Positive) from a few hand-picked words."""
    score = {"great": 0.95, "superb": 0.99, "lovely": 0.6, "fine": 0.55, "awful": 0.02, "dreadful": 0.02, "poor": 0.1}

    def polar(sentences, label):
        out = []
        for s in sentences:
            found = [p for w, p in score.items() if w in s.lower()]
            p = min(found) if found else 0.5
            out.append(p if label == "Positive" else 1 - p)
        return out

    return polar


def _with_lexicon_members(project, tmp_path, stub, monkeypatch, edit, *, polar=_lexicon_polar, review=REVIEW,
                          more=(), **settings):
    """Generate for the first review with ``polar`` (``_lexicon_polar``) as the members' sentence reading;
    ``edit(body)`` answers the edit requests. Returns (result, candidate row, request bodies)."""
    import engine.counterbias.sentence_reading as sentence_reading

    monkeypatch.setattr(sentence_reading, "members_polar", polar)
    dataset = _dataset_with_vote(project, tmp_path, review=review, more=more)
    sent = []
    server = stub(reply=lambda body: sent.append(body) or (edit(body) if _editing(body) else scripted_reply(body)))
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url)
    first = [int(next(iter(project.iter_examples(dataset.id)))["id"])]
    result = generate_counterbias(project, dataset.id, first, config, judge=["r:tiny-distilbert"],
                                  settings=GenerateSettings(**{"swap_gender": False,
                                                               "edit_polar": 0.0, "sentence_reader": "members",
                                                               **settings}))
    return result, candidate_rows(project, dataset_id=dataset.id)[0], sent


def _first_then(first: str, repaired: str):
    return lambda body: repaired if "still reads as" in body["messages"][-1]["content"] else first


def test_an_edit_that_still_reads_as_the_original_label_is_repaired(voted_project, stub, tmp_path, monkeypatch):
    """``edit_moved``: "great" → "fine" (a near-synonym) leaves the sentence Positive for the members;
    one repair says so, and the repaired sentence is kept because it reads more as the target."""
    result, row, sent = _with_lexicon_members(voted_project, tmp_path, stub, monkeypatch, _first_then(
        "The plot is fine and the music is lovely.", "The plot is dreadful and the music is lovely."))
    assert len(result.created) == 1
    assert "The plot is dreadful and the music is lovely." in row["text"]
    edit = row["meta"]["fields"][0]["edits"][0]
    assert edit["problems"] == ["unmoved"] and row["meta"]["repairs"] == {"edit": 1}
    asked = [b["messages"][-1]["content"] for b in sent if "still reads as" in b["messages"][-1]["content"]]
    assert len(asked) == 1 and '"fine" mean much the same as "great"' in asked[0]
    assert "Negative" in asked[0]


def test_a_repair_that_reads_less_as_the_target_is_kept_out(voted_project, stub, tmp_path, monkeypatch):
    """The repair reads less as the target than "fine": kept out. "fine" itself, still unmoved after every try (the
    fresh try answers it again), is dropped at the end: the sentence stays as written, and with no sentence edited
    the slot fails, retriably, saying why."""
    result, row, _ = _with_lexicon_members(voted_project, tmp_path, stub, monkeypatch, _first_then(
        "The plot is fine and the music is lovely.", "The plot is great, truly great, and the music is lovely."))
    assert not result.created and row["status"] == "failed"
    assert row["meta"]["fields"][0]["edits"][0]["problems"] == ["unmoved", "repair kept out", "unmoved, dropped"]
    assert "still read as Positive" in row["meta"]["error"]["message"] and row["meta"]["error"]["retriable"]


def _by_seed(first: str, repaired: str, fresh: str):
    """Edit answers: the first request, its repair ("still reads as"), the fresh try (seed 13 + 500)."""
    def edit(body):
        if body.get("seed") == 513:
            return fresh
        return repaired if "still reads as" in body["messages"][-1]["content"] else first
    return edit


def test_an_edit_still_unmoved_after_its_repair_gets_a_fresh_try(voted_project, stub, tmp_path, monkeypatch):
    result, row, sent = _with_lexicon_members(voted_project, tmp_path, stub, monkeypatch, _by_seed(
        "The plot is fine and the music is lovely.", "The plot is great, truly great, and the music is lovely.",
        "The plot is dreadful and the music is lovely."))
    assert len(result.created) == 1 and "The plot is dreadful and the music is lovely." in row["text"]
    assert row["meta"]["repairs"] == {"edit": 1, "fresh": 1, "strong": 1}
    fresh = [b for b in sent if b.get("seed") == 513]
    assert len(fresh) == 1 and fresh[0]["messages"][0] == _STRONG_SYSTEM


def test_a_fresh_try_that_reads_less_as_the_target_is_kept_out(voted_project, stub, tmp_path, monkeypatch):
    result, row, _ = _with_lexicon_members(voted_project, tmp_path, stub, monkeypatch, _by_seed(
        "The plot is fine and the music is lovely.", "The plot is great, truly great, and the music is lovely.",
        "The plot is superb and the music is lovely."))
    assert row["status"] == "failed"  # "fine", kept until the end, is dropped as still unmoved
    assert row["meta"]["fields"][0]["edits"][0]["problems"] == ["unmoved", "repair kept out", "fresh try kept out",
                                                                "unmoved, dropped"]


def test_edit_moved_off_sends_no_repair(voted_project, stub, tmp_path, monkeypatch):
    _, _, sent = _with_lexicon_members(voted_project, tmp_path, stub, monkeypatch,
                                       lambda body: "The plot is fine and the music is lovely.", edit_moved=0.0)
    assert sum(_editing(b) for b in sent) == 1


def test_an_edit_that_moves_away_from_the_target_is_dropped(voted_project, stub, tmp_path, monkeypatch):
    """Both the edit and its repair read less as the target (Negative) than the sentence: it stays as it was,
    and a candidate with no other edited sentence fails with that reason."""
    result, row, sent = _with_lexicon_members(voted_project, tmp_path, stub, monkeypatch,
                                              lambda body: "The plot is great and the music is superb.")
    assert not result.created and row["status"] == "failed"
    assert row["meta"]["error"]["reason"] == "wrong direction"
    edit = row["meta"]["fields"][0]["edits"][0]
    # the repair repeated it, and so did the fresh try
    assert edit["new"] is None and edit["problems"] == ["unmoved", "wrong direction", "wrong direction"]
    asked = [b["messages"][-1]["content"] for b in sent if _editing(b) and "cannot be used" in b["messages"][-1]["content"]]
    assert len(asked) == 1 and 'reads less as Negative than the sentence did. "superb" point away' in asked[0]


def test_a_text_that_names_a_person_keeps_its_gendered_words(voted_project, stub, tmp_path):
    from engine.text.nlp import load_spacy

    if load_spacy() is None:
        pytest.skip("spaCy's pipeline is not installed: without it no text is known to name a person")
    named = REVIEW.replace("my brother", "Burt Reynolds and his brother")
    _dataset_with_vote(voted_project, tmp_path, review=named)
    server = stub(reply=scripted_reply)
    result, rows = _run(voted_project, server)
    assert len(result.created) == 1
    assert rows[0]["text"] == named.replace(TARGET, "The plot is awful and the music is lovely.")
    plan = rows[0]["meta"]["fields"][0]
    assert plan["gender_swapped"] is False and plan["gender_swaps"] == []


def test_names_and_dates_of_an_edited_sentence_are_kept(voted_project, stub, tmp_path):
    """The edited sentence names a person and a year: both are words to copy, and an answer that drops the
    name is refused and repaired."""
    from engine.text.nlp import load_spacy

    if load_spacy() is None:
        pytest.skip("spaCy's pipeline is not installed: without it no facts are known")
    target = "The plot is great and Burt Reynolds was lovely in 1978."
    _dataset_with_vote(voted_project, tmp_path, review=REVIEW.replace(TARGET, target))
    sent = []
    reply = _dropping(lambda s: "The plot is awful and he was lovely in 1978." if "Burt" in s else edit_sentence(s),
                      edit_sentence)
    server = stub(reply=lambda body: sent.append(body) or reply(body))
    result, rows = _run(voted_project, server, swap_gender=False)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    edit = rows[0]["meta"]["fields"][0]["edits"][0]
    assert {"Burt", "Reynolds", "1978"} <= set(edit["keep"]) and edit["problems"] == ["missing words"]
    assert "The plot is awful and Burt Reynolds was lovely in 1978." in rows[0]["text"]
    first = next(b for b in sent if _editing(b))["messages"][-1]["content"]
    assert "Words to copy exactly: plot, Burt, Reynolds, 1978" in first


def test_a_principal_word_of_a_quoted_title_is_copied_not_changed(voted_project, stub, tmp_path):
    """The vote calls "superb" principal and the reader reads it alone as Positive, but in '"Superb Grace"' it names
    a film: it is not named to change and stays among the words to copy (CAD dev 1858, '"Amazing Grace"': named, the
    bundled model's last try wrote "Terrible Grace")."""
    target = '"Superb Grace" has a great plot and the music is lovely.'
    _dataset_with_vote(voted_project, tmp_path, principal=("great", "superb"), review=REVIEW.replace(TARGET, target))
    sent = []
    server = stub(reply=lambda body: sent.append(body) or scripted_reply(body))
    result, rows = _run(voted_project, server, swap_gender=False)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    edit = rows[0]["meta"]["fields"][0]["edits"][0]
    assert "great" in edit["change"] and "Superb" not in edit["change"] and {"Superb", "Grace"} <= set(edit["keep"])
    assert '"Superb Grace" has an awful plot' in rows[0]["text"]
    first = next(b for b in sent if _editing(b))["messages"][-1]["content"]
    assert "Superb" in first.split("Words to copy exactly:", 1)[1].split("\n", 1)[0]


def test_fact_words_leave_out_label_words():
    from engine.counterbias.edit import fact_words
    from engine.text.nlp import load_spacy

    if load_spacy() is None:
        pytest.skip("spaCy's pipeline is not installed")
    assert fact_words("I saw it at the 2005 Palm Springs festival with Lee Pace.")[:1] == ["2005"]
    assert "Pace" in fact_words("I saw it at the 2005 Palm Springs festival with Lee Pace.")
    assert fact_words("Awesome Awesome Awesome!", {"awesome": 9.1}) == []
    # a quoted title is a fact whatever its words say of the label ("Amazing Grace" -> "Disgusting Grace" was seen)
    assert fact_words('"Amazing Grace" has a languid feel to it.', {"amazing": 9.1})[:2] == ["Amazing", "Grace"]
    assert "good" not in fact_words('It is "not even good" for members of that church!')


#: Rated rows, written for these tests: Positive reviews rate high and Negative ones low (the sides are learned).
RATED = [(f"A fine evening, {n}/10.", "Positive") for n in (7, 8, 8, 9, 9, 10, 10, 8)] + [
    (f"A poor evening, {n} out of 10.", "Negative") for n in (1, 2, 2, 3, 3, 4, 1, 2)]


def test_a_rating_of_the_original_label_is_edited_and_a_kept_rating_repaired(voted_project, stub, tmp_path):
    """The review's last sentence holds no principal word but rates it 10/10: it is edited with "10/10" named to
    change; an answer that keeps 10/10 is refused ("rating kept") and the repair, asked for e.g. "2/10", taken."""
    review = REVIEW + " I give it 10/10."
    _dataset_with_vote(voted_project, tmp_path, review=review, more=RATED)
    sent = []

    def reply(body):
        sent.append(body)
        sentence = sentence_to_edit(body)
        if sentence != "I give it 10/10.":
            return scripted_reply(body)
        repairing = "cannot be used" in body["messages"][-1]["content"]
        return "I give it 2/10." if repairing else "I happily give it 10/10."

    result, rows = _run(voted_project, stub(reply=reply), swap_gender=False)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    assert rows[0]["text"].endswith("The cinema was cold. I give it 2/10.")
    edit = next(e for e in rows[0]["meta"]["fields"][0]["edits"] if e["sentence"] == "I give it 10/10.")
    assert edit["change"] == ["10/10"] and edit["problems"] == ["rating kept"]
    first = next(b for b in sent if sentence_to_edit(b) == "I give it 10/10.")["messages"][-1]["content"]
    assert "Words to change: 10/10" in first
    repair = next(b for b in sent if "cannot be used" in b["messages"][-1]["content"])["messages"][-1]["content"]
    assert '"10/10", which goes with Positive' in repair and '"2/10"' in repair


def test_without_rated_rows_a_rating_is_left_alone(voted_project, stub, tmp_path):
    """Two rows cannot say which label goes with which end of the scale: the rating sentence is not sent."""
    _dataset_with_vote(voted_project, tmp_path, review=REVIEW + " I give it 10/10.")
    sent = []
    result, rows = _run(voted_project, stub(reply=lambda body: sent.append(body) or scripted_reply(body)),
                        swap_gender=False)
    assert len(result.created) == 1 and rows[0]["text"].endswith("I give it 10/10.")
    assert [sentence_to_edit(b) for b in sent if _editing(b)] == [TARGET]


def test_fact_words_leave_out_the_numbers_of_a_rating():
    from engine.counterbias.edit import fact_words
    from engine.text.nlp import load_spacy

    if load_spacy() is None:
        pytest.skip("spaCy's pipeline is not installed")
    assert fact_words("I saw it in 2005 and give it 10/10.") == ["2005"]
    assert fact_words("I rate it a 9.0 on a scale of 10.") == []


def test_fact_words_keep_amounts_and_counts():
    """An edit turned "15 worms in 15 days ... 30 dollars" into "one day ... 10 dollars": numbers are facts."""
    from engine.counterbias.edit import fact_words
    from engine.text.nlp import load_spacy

    if load_spacy() is None:
        pytest.skip("spaCy's pipeline is not installed")
    words = fact_words("Billy had to eat 15 worms in 15 days to win 30 dollars, and 2 thumbs up, 8/10.")
    assert {"15", "30", "2"} <= set(words) and "8/10" not in words and "8" not in words


def test_a_candidate_that_keeps_the_rating_fails_the_rating_check(voted_project, stub, tmp_path):
    """The LLM keeps 10/10 in its edit and its repair: the sentence stays as it was, the candidate is made from the
    other edit, and verification (the dataset's rating sides, learned from its rows) holds it back."""
    from engine.counterbias import judge_candidates

    _dataset_with_vote(voted_project, tmp_path, review=REVIEW + " I give it 10/10.", more=RATED)

    def reply(body):
        if sentence_to_edit(body) == "I give it 10/10.":
            return "I honestly give it 10/10."
        return scripted_reply(body)

    result, rows = _run(voted_project, stub(reply=reply), swap_gender=False, edit_fresh=False)
    assert len(result.created) == 1 and rows[0]["text"].endswith("I give it 10/10.")
    scores = judge_candidates(voted_project, result.created, [])[result.created[0]]
    assert scores["verdicts"]["rating"] == {"status": "fail", "reason": 'rates it "10/10", a rating that goes with '
                                                                         "Positive"}
    assert scores["passes"] is False


def test_a_sentence_that_is_only_a_rating_is_moved_when_its_rating_turns(voted_project, stub, tmp_path, monkeypatch):
    """The members misread "2/10 stars!" as Positive as "10/10 stars!" (they never learned ratings): a turned rating
    in a sentence with no other word of the original label counts as moved, so no repair or fresh try is sent."""
    def misreading(project, members, token):
        lexicon = _lexicon_polar(project, members, token)
        return lambda sentences, label: [(0.9 if label == "Positive" else 0.1) if "stars" in s else p
                                         for s, p in zip(sentences, lexicon(sentences, label))]

    def edit(body):
        sentence = sentence_to_edit(body)
        return sentence.replace("10/10", "2/10") if "10/10" in sentence else edit_sentence(sentence)

    result, row, sent = _with_lexicon_members(voted_project, tmp_path, stub, monkeypatch, edit, polar=misreading,
                                              review=REVIEW + " 10/10 stars!", more=RATED)
    assert len(result.created) == 1 and row["text"].endswith("The cinema was cold. 2/10 stars!")
    rating = next(e for e in row["meta"]["fields"][0]["edits"] if e["sentence"] == "10/10 stars!")
    assert rating["problems"] == [] and row["meta"]["repairs"] == {}
    assert sum(sentence_to_edit(b) == "10/10 stars!" for b in sent) == 1


def test_a_sentence_whose_principal_words_already_speak_for_the_target_is_left_alone(voted_project, stub, tmp_path):
    """Target Negative: "dull" is a principal word, but the data tie it to Negative (z >= 2.5), so the sentence
    holding only it is not sent, and "dull" is never named to change; the sentence with "great" is edited."""
    review = REVIEW.replace("The cinema was cold.", "The dull cinema was cold.")
    more = [(f"A dull evening number {n}.", "Negative") for n in range(12)] + [
        (f"An evening number {n}.", "Positive") for n in range(12)]
    _dataset_with_vote(voted_project, tmp_path, principal=("great", "dull"), review=review, more=more)
    sent = []
    result, rows = _run(voted_project, stub(reply=lambda body: sent.append(body) or scripted_reply(body)),
                        swap_gender=False)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    assert [sentence_to_edit(b) for b in sent if _editing(b)] == [TARGET]
    edits = rows[0]["meta"]["fields"][0]["edits"]
    # the sentence reads as Positive, and the LLM marks its opinion words: those are named
    assert [e["sentence"] for e in edits] == [TARGET] and edits[0]["change"] == ["great", "lovely"]
    assert rows[0]["text"].endswith("The dull cinema was cold.")
    # without the marking, the principal words are named, "dull" never
    _, rows = _run(voted_project, stub(reply=scripted_reply), swap_gender=False,
                   edit_opinion=False)
    assert [r["meta"]["fields"][0]["edits"][0]["change"] for r in rows] == [["great", "lovely"], ["great"]]


#: Written for these tests: the last sentence speaks for the label without holding a principal word.
RECOMMENDED = REVIEW + " I would recommend it to anyone."


def test_the_llm_reads_sentences_and_edits_those_speaking_for_the_original_label(voted_project, stub, tmp_path):
    """Sentence reader ``llm`` (default): every sentence is read alone (prompt ``read_sentence``); the one that
    speaks for Positive without a principal word is edited too, plot sentences are not; the finished text is
    read again and nothing of the original label is left (the residual check passes)."""
    from engine.counterbias import judge_candidates

    _dataset_with_vote(voted_project, tmp_path, review=RECOMMENDED)
    sent = []
    server = stub(reply=lambda body: sent.append(body) or scripted_reply(body))
    result, rows = _run(voted_project, server, swap_gender=False)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    plan = rows[0]["meta"]["fields"][0]
    assert plan["polar"] == [1, 3] and sorted(e["index"] for e in plan["edits"]) == [1, 3]
    assert rows[0]["text"].endswith("I would not recommend it to anyone.")
    assert "I watched it with my brother on Friday." in rows[0]["text"]  # read as none: left as it was
    read = [b["messages"][-1]["content"] for b in sent if "Sentence to read:" in b["messages"][-1]["content"]]
    assert any(r.endswith("Sentence to read: The cinema was cold.") for r in read)
    assert "(labels: Negative, Positive; or none)" in read[0]
    assert plan["residual"] == []
    scores = judge_candidates(voted_project, result.created, [])[result.created[0]]
    assert scores["verdicts"]["residual"] == {"status": "pass", "reason": "no sentence reads as Positive"}


def test_a_sentence_still_read_as_the_original_label_holds_the_candidate_back(voted_project, stub, tmp_path):
    """With ``edit_polar`` off only the principal sentence is edited; the reader finds "I would recommend it"
    still speaking for Positive in the finished text, and the residual check fails the candidate."""
    from engine.counterbias import judge_candidates

    _dataset_with_vote(voted_project, tmp_path, review=RECOMMENDED)
    result, rows = _run(voted_project, stub(reply=scripted_reply), swap_gender=False,
                        edit_polar=0.0)
    assert len(result.created) == 1
    assert rows[0]["meta"]["fields"][0]["residual"] == ["I would recommend it to anyone."]
    scores = judge_candidates(voted_project, result.created, [])[result.created[0]]
    assert scores["verdicts"]["residual"] == {
        "status": "fail",
        "reason": '1 of 4 sentences still reads as Positive (at most 20% may): "I would recommend it to anyone."'}
    assert scores["passes"] is False
    # the members' reading gives no residual verdict
    _, rows = _run(voted_project, stub(reply=scripted_reply), swap_gender=False, edit_polar=0.0,
                   sentence_reader="members")
    members_row = [r for r in rows if r["id"] not in result.created][0]
    assert "residual" not in members_row["meta"]["fields"][0]


def test_an_unusable_reading_is_asked_once_more_then_is_no_verdict(voted_project, stub, tmp_path):
    """The reader's answer is data: "It is positive, I think" is not a label; the reminder's answer is used when
    it is one, and a second unusable answer leaves the sentence unread (not edited for its reading)."""
    _dataset_with_vote(voted_project, tmp_path, review=RECOMMENDED)
    reminders = []

    def reply(body):
        last = body["messages"][-1]["content"]
        if last.startswith("Answer with exactly one of these words"):
            reminders.append(body["messages"][-3]["content"].rsplit("Sentence to read: ", 1)[1])
            return "Positive" if "recommend" in reminders[-1] else "I cannot tell."
        if "Sentence to read:" in last and ("recommend" in last or "cinema" in last):
            return "It is positive, I think"
        return scripted_reply(body)

    result, rows = _run(voted_project, stub(reply=reply), swap_gender=False)
    plan = rows[0]["meta"]["fields"][0]
    assert sorted(reminders[:2]) == ["I would recommend it to anyone.", "The cinema was cold."]
    assert plan["polar"] == [1, 3]  # "recommend" read on the reminder; "cinema" unread, so not edited
    assert "The cinema was cold." in rows[0]["text"]


def _twice_without_retries(project, server):
    """Generate for the first example twice (client retries off); yield each run's result and first row."""
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0)
    dataset = project.dataset("multi")
    first = [int(next(iter(project.iter_examples(dataset.id)))["id"])]
    settings = GenerateSettings(swap_gender=False)
    for _ in range(2):
        result = generate_counterbias(project, dataset.id, first, config, settings=settings, judge=())
        yield result, candidate_rows(project, dataset_id=dataset.id)[0]


def test_a_reading_lost_in_transport_fails_the_slot_before_any_edit_is_sent(voted_project, stub, tmp_path):
    """A read request answered 500 (client retries off): it is not sent again in that run (the chunk's readings
    are sent once, before the edits are planned), the slot is stored as failed at step "read", retriably, before any
    edit request is sent (planned without that reading, they would differ from the next run's); a second run
    re-sends that one reading and makes the candidate, the other readings coming from the cache."""
    _dataset_with_vote(voted_project, tmp_path, review=RECOMMENDED)
    attempts: dict[str, int] = {}

    def plan(body, attempt):
        last = body["messages"][-1]["content"]
        if last.endswith("Sentence to read: The cinema was cold."):
            attempts["cinema"] = attempt
            return "500" if attempt == 1 else "ok"
        return "ok"

    sent = []
    run = _twice_without_retries(voted_project, stub(plan, reply=lambda body: sent.append(body) or scripted_reply(body)))
    one, row = next(run)
    assert not one.created and row["status"] == "failed" and attempts["cinema"] == 1
    assert row["meta"]["error"]["step"] == "read" and row["meta"]["error"]["retriable"]
    assert one.sent == 4 and not any(map(_editing, sent))  # the four readings only
    two, _ = next(run)
    assert len(two.created) == 1 and attempts["cinema"] == 2 and two.cache_hits >= 3


def _marking(body) -> bool:
    return "\nRead as:" in body["messages"][-1]["content"]


def _lovely_marked(sent):
    """Replies for a review whose spurious "lovely" the scripted marker marks: an edit turns "great" into
    "dreadful", and "lovely" into "dreary" unless it is among the words to copy. Every request goes to ``sent``."""
    from tests.engine.counterbias.scripted_llm import words_to_keep

    def reply(body):
        sent.append(body)
        sentence = sentence_to_edit(body)
        if sentence is None:
            return scripted_reply(body)
        edited = sentence.replace("great", "dreadful")
        return edited if "lovely" in words_to_keep(body) else edited.replace("lovely", "dreary")

    return reply


def test_a_spurious_word_marked_as_an_opinion_word_is_released(voted_project, stub, tmp_path):
    """The principal sentence reads as Positive and the LLM marks "great, lovely" as what makes it so (prompt
    ``opinion_words``). "lovely" is a spurious word: it is released (not among the words to copy), the edit changes
    it, the candidate records it, and the spurious-word check passes without it ("plot" is still required)."""
    from engine.counterbias import judge_candidates
    from tests.engine.counterbias.scripted_llm import words_to_keep

    _dataset_with_vote(voted_project, tmp_path, spurious=("plot", "lovely"))
    sent = []
    result, rows = _run(voted_project, stub(reply=_lovely_marked(sent)), swap_gender=False)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    edit = rows[0]["meta"]["fields"][0]["edits"][0]
    assert edit["opinion"] == ["great", "lovely"] and edit["released"] == ["lovely"] and edit["keep"] == ["plot"]
    assert "held" not in edit
    edits = [b for b in sent if _editing(b)]
    assert words_to_keep(edits[0]) == ("plot",)  # released at once: the first request may change it
    marked = [b["messages"][-1]["content"] for b in sent if _marking(b)]
    assert len(marked) == 1 and "Read as: Positive" in marked[0] and marked[0].endswith("Sentence: " + TARGET)
    assert rows[0]["text"] == REVIEW.replace("great", "dreadful").replace("lovely", "dreary")
    scores = judge_candidates(voted_project, result.created, [])[result.created[0]]
    assert scores["missing_spurious"] == [] and scores["released_spurious"] == ["lovely"]
    assert scores["verdicts"]["spurious-kept"] == {
        "status": "pass", "reason": "1 of 2 kept; released as opinion words: lovely"}


def test_an_unusable_marking_is_no_verdict_and_edit_opinion_off_sends_none(voted_project, stub, tmp_path):
    """The marking is data: an answer naming words that are not in the sentence marks nothing, so the sentence is
    planned as without it (principal words named, every spurious word kept); ``edit_opinion=False`` sends no
    marking request at all."""
    _dataset_with_vote(voted_project, tmp_path, spurious=("plot", "lovely"))
    sent = []

    def reply(body):
        sent.append(body)
        return "a dull mess from start to finish" if _marking(body) else scripted_reply(body)

    _run(voted_project, stub(reply=reply), swap_gender=False, edit_opinion=False)
    assert sent and not any(map(_marking, sent))
    _, rows = _run(voted_project, stub(reply=reply), swap_gender=False)
    edit = rows[-1]["meta"]["fields"][0]["edits"][0]
    assert sum(map(_marking, sent)) == 1
    assert "opinion" not in edit and "released" not in edit
    assert edit["change"] == ["great"] and edit["keep"] == ["plot", "lovely"]


def test_a_marking_lost_in_transport_fails_the_slot_before_any_edit_is_sent(voted_project, stub, tmp_path):
    """A marking request answered 500 (client retries off) fails the slot retriably at step "read" before any edit
    request is sent (planned without the marking, they would differ from the next run's); the next run sends the
    marking again, then the edit."""
    _dataset_with_vote(voted_project, tmp_path)
    attempts = []

    def plan(body, attempt):
        if _marking(body):
            attempts.append(attempt)
            return "500" if attempt == 1 else "ok"
        return "ok"

    run = _twice_without_retries(voted_project, stub(plan, reply=scripted_reply))
    one, row = next(run)
    assert not one.created and row["status"] == "failed" and attempts == [1] and one.sent == 4  # readings, marking
    assert row["meta"]["error"]["step"] == "read" and row["meta"]["error"]["retriable"]
    two, _ = next(run)
    # sent: the marking, the edit never sent before, the reading of the edited sentence
    assert len(two.created) == 1 and attempts == [1, 2] and two.sent == 3


def test_a_principal_word_outside_the_marking_is_named_only_when_it_reads_as_the_label(voted_project, stub, tmp_path):
    """The LLM marks only "lovely"; of the principal words left outside the marking, "great" reads alone as Positive
    (the sentence reader) and is named too, "music" reads as none and is not."""
    _dataset_with_vote(voted_project, tmp_path, principal=("great", "music"))
    sent = []

    def reply(body):
        sent.append(body)
        return "lovely" if _marking(body) else scripted_reply(body)

    result, rows = _run(voted_project, stub(reply=reply), swap_gender=False)
    edit = rows[0]["meta"]["fields"][0]["edits"][0]
    assert edit["opinion"] == ["lovely"] and edit["change"] == ["lovely", "great"]
    read = [b["messages"][-1]["content"].rsplit("Sentence to read: ", 1)[1] for b in sent
            if "Sentence to read:" in b["messages"][-1]["content"]]
    assert {"great", "music"} <= set(read)


def test_a_marked_name_is_not_named_to_change(voted_project, stub, tmp_path):
    """The LLM marks "Burt Reynolds" with "great": a phrase made only of names, titles or dates would contradict the
    words to copy, so only "great" is named, and the name stays among the words to copy."""
    from engine.text.nlp import load_spacy

    if load_spacy() is None:
        pytest.skip("spaCy's pipeline is not installed: without it no facts are known")
    target = "The plot is great and Burt Reynolds was lovely in 1978."
    _dataset_with_vote(voted_project, tmp_path, review=REVIEW.replace(TARGET, target))

    def reply(body):
        return "Burt Reynolds, great" if _marking(body) else scripted_reply(body)

    _, rows = _run(voted_project, stub(reply=reply), swap_gender=False)
    edit = rows[0]["meta"]["fields"][0]["edits"][0]
    assert edit["opinion"] == ["great"] and edit["change"] == ["great"]
    assert {"Burt", "Reynolds", "1978"} <= set(edit["keep"])


def _swapping(body) -> bool:
    return "\nPhrase:" in body["messages"][-1]["content"]


#: An edit that swaps a synonym: the sentence still reads as Positive (scripted reader: "superb", "lovely").
SYNONYM = "The plot is superb and the music is lovely."


def test_a_sentence_every_edit_left_unmoved_gets_its_marked_phrases_swapped(voted_project, stub, tmp_path):
    """Every edit of the principal sentence swaps a synonym ("great" → "superb"), read as Positive still: after the
    repair and the fresh try, each marked phrase ("great", "lovely") is asked for its opposite (prompt
    ``opposite_phrase``) and replaced in the sentence as written; it reads as Negative now, so it is taken, and
    every other byte of the review stays (the spurious "plot" included)."""
    _dataset_with_vote(voted_project, tmp_path)
    sent = []
    server = stub(reply=lambda body: sent.append(body) or (SYNONYM if _editing(body) else scripted_reply(body)))
    result, rows = _run(voted_project, server, swap_gender=False)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    assert rows[0]["text"] == REVIEW.replace(TARGET, "The plot is awful and the music is dull.")
    edit = rows[0]["meta"]["fields"][0]["edits"][0]
    assert edit["swapped"] == {"great": "awful", "lovely": "dull"} and edit["keep"] == ["plot"]
    assert edit["problems"][0] == "unmoved" and rows[0]["meta"]["repairs"]["swap"] == 1
    asked = [b["messages"][-1]["content"] for b in sent if _swapping(b)]
    # the two requests go out together, so they may arrive in either order
    assert sorted(a.rsplit("Sentence: ", 1)[1] for a in asked) == [
        f"{TARGET}\nPhrase: {p}\nFrom Positive to: Negative" for p in ("great", "lovely")]
    assert rows[0]["meta"]["fields"][0]["residual"] == []


def test_a_swap_that_reads_no_more_as_the_target_is_kept_out_and_the_switch_sends_none(voted_project, stub, tmp_path):
    """The answers are data: a replacement that is the phrase again is no replacement, and a swapped sentence that
    still reads as Positive is kept out; the synonym edit, unmoved after every try, is dropped (the sentence stays
    as written, and with no sentence edited the slot fails). ``edit_swap=False`` sends no swap request."""
    _dataset_with_vote(voted_project, tmp_path)
    sent = []

    def reply(body):
        sent.append(body)
        if _swapping(body):
            return "great" if "Phrase: great" in body["messages"][-1]["content"] else "superb"
        return SYNONYM if _editing(body) else scripted_reply(body)

    _, rows = _run(voted_project, stub(reply=reply), swap_gender=False, edit_swap=False)
    assert sent and not any(map(_swapping, sent))
    _, rows = _run(voted_project, stub(reply=reply), swap_gender=False)
    row = rows[-1]
    assert row["status"] == "failed" and row["text"] is None
    edit = row["meta"]["fields"][0]["edits"][0]
    assert "swapped" not in edit and edit["problems"][-2:] == ["swap kept out", "unmoved, dropped"]
    assert "swap" not in row["meta"]["repairs"] and edit["new"] is None


def test_a_swap_lost_in_transport_fails_the_slot_and_the_next_run_completes_it(voted_project, stub, tmp_path):
    """A swap request answered 500 (client retries off) fails the slot retriably; the next run sends it again (the
    other answers come from the cache) and makes the candidate with the swap."""
    _dataset_with_vote(voted_project, tmp_path)
    attempts = []

    def plan(body, attempt):
        if _swapping(body) and "Phrase: lovely" in body["messages"][-1]["content"]:
            attempts.append(attempt)
            return "500" if attempt == 1 else "ok"
        return "ok"

    server = stub(plan, reply=lambda body: SYNONYM if _editing(body) else scripted_reply(body))
    run = _twice_without_retries(voted_project, server)
    one, row = next(run)
    assert not one.created and row["status"] == "failed" and row["meta"]["error"]["retriable"] and attempts == [1]
    two, row = next(run)
    assert len(two.created) == 1 and attempts == [1, 2]
    assert "The plot is awful and the music is dull." in row["text"]


def test_an_edit_unmoved_after_every_try_is_dropped_and_its_sentence_stays_as_written(voted_project, stub, tmp_path):
    """"I would recommend it to anyone." comes back as "… to everyone." from every request (still Positive for the
    reader): after its repair and fresh try the edit is dropped and the sentence stays byte-identical, while the
    principal sentence's edit, which moved, makes the candidate; the residual check names the sentence left."""
    _dataset_with_vote(voted_project, tmp_path, review=RECOMMENDED)
    result, rows = _run(voted_project, stub(reply=_stubborn_reply), swap_gender=False,
                        edit_swap=False, edit_remove=False)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    assert rows[0]["text"] == RECOMMENDED.replace(TARGET, "The plot is awful and the music is dull.")
    plan = rows[0]["meta"]["fields"][0]
    dropped = [e for e in plan["edits"] if e["index"] == 3][0]
    assert dropped["new"] is None and dropped["problems"] == ["unmoved", "unmoved, dropped"]
    assert plan["residual"] == ["I would recommend it to anyone."]


def _stubborn_reply(body):
    """Every edit of "I would recommend it to anyone." comes back as "… to everyone." (still Positive)."""
    sentence = sentence_to_edit(body)
    if sentence is None:
        return scripted_reply(body)
    if "recommend" in sentence:
        return "I would recommend it to everyone."
    return sentence.replace("great", "awful").replace("lovely", "dull")


def test_a_sentence_unmoved_after_every_try_is_removed_by_default(voted_project, stub, tmp_path):
    """``edit_remove`` (default): the stubborn "I would recommend it to anyone." holds no word to keep and another
    sentence was edited, so it is removed with the space before it; the candidate has no sentence left for the
    original label, every other byte is the original's, and the edit records the removal."""
    from engine.counterbias import judge_candidates

    _dataset_with_vote(voted_project, tmp_path, review=RECOMMENDED)
    result, rows = _run(voted_project, stub(reply=_stubborn_reply), swap_gender=False,
                        edit_swap=False)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    assert rows[0]["text"] == REVIEW.replace(TARGET, "The plot is awful and the music is dull.")
    plan = rows[0]["meta"]["fields"][0]
    removed = [e for e in plan["edits"] if e["index"] == 3][0]
    assert removed["new"] == "" and removed["removed"] is True and removed["failure"] is None
    assert removed["problems"][-2:] == ["unmoved, dropped", "removed"]
    assert rows[0]["meta"]["repairs"]["remove"] == 1 and plan["residual"] == []
    scores = judge_candidates(voted_project, result.created, [])[result.created[0]]
    assert scores["verdicts"]["residual"]["status"] == "pass"


def test_a_stubborn_sentence_holding_a_word_to_keep_stays(voted_project, stub, tmp_path):
    """The same sentence holding a spurious word ("brother") is not removed: the spurious word must survive."""
    review = REVIEW + " I would recommend it to my brother."
    _dataset_with_vote(voted_project, tmp_path, review=review)

    def reply(body):
        sentence = sentence_to_edit(body)
        if sentence is not None and "recommend" in sentence:
            return "I would recommend it to my brother!"
        return _stubborn_reply(body)

    result, rows = _run(voted_project, stub(reply=reply), swap_gender=False, edit_swap=False)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    assert rows[0]["text"].endswith("I would recommend it to my brother.")
    stayed = [e for e in rows[0]["meta"]["fields"][0]["edits"] if e["index"] == 3][0]
    assert stayed["new"] is None and "removed" not in stayed and "remove" not in rows[0]["meta"]["repairs"]


def test_a_stubborn_sentence_stays_when_nothing_else_was_edited(voted_project, stub, tmp_path):
    """Removal never makes a candidate alone: when the only other edit is unusable too, nothing is removed."""
    _dataset_with_vote(voted_project, tmp_path, review=RECOMMENDED)

    def reply(body):
        sentence = sentence_to_edit(body)
        if sentence is not None and "plot" in sentence:
            return sentence  # unchanged, every time: unusable
        return _stubborn_reply(body)

    _, rows = _run(voted_project, stub(reply=reply), swap_gender=False, edit_swap=False)
    edits = rows[0]["meta"]["fields"][0]["edits"]
    assert edits and all(not e.get("removed") and e["new"] != "" for e in edits)
    assert "remove" not in rows[0]["meta"].get("repairs", {})


def test_a_short_sentence_read_as_the_original_label_is_edited_with_the_llm_reader(voted_project, stub, tmp_path):
    """The LLM reads two-word sentences ("So good!") as well as long ones: chosen for an edit (the members'
    reading keeps its three-word minimum)."""
    _dataset_with_vote(voted_project, tmp_path, review=REVIEW + " So good!")
    result, rows = _run(voted_project, stub(reply=scripted_reply), swap_gender=False)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    assert 3 in rows[0]["meta"]["fields"][0]["polar"]
    assert rows[0]["text"].endswith(" So bad!"), json.dumps(rows[0]["meta"]["fields"][0]["edits"])


def test_a_principal_sentence_without_an_opinion_word_stays_as_written(voted_project, stub, tmp_path):
    """"Friday" is principal, but its sentence reads as none and the LLM marks no opinion word in it: it is not sent
    for editing and stays byte for byte (recorded as ``plain``), where naming "Friday" got another day; the gender
    swap still reaches it. Sentences read as the label are edited as before."""
    _dataset_with_vote(voted_project, tmp_path, principal=("great", "Friday"), spurious=("plot",))
    sent = []
    server = stub(reply=lambda body: sent.append(body) or scripted_reply(body))
    result, rows = _run(voted_project, server)
    assert len(result.created) == 1, rows[0]["meta"].get("error")
    friday = "I watched it with my brother on Friday."
    marked = [b["messages"][-1]["content"] for b in sent if _marking(b)]
    assert any(m.endswith("Sentence: " + friday) for m in marked)  # asked, answered none
    assert {sentence_to_edit(b) for b in sent if _editing(b)} == {TARGET}
    plan = rows[0]["meta"]["fields"][0]
    assert plan["plain"] == [0] and [e["index"] for e in plan["edits"]] == [1]
    assert rows[0]["text"].startswith("I watched it with my sister on Friday.  The plot is")


def test_a_text_whose_principal_sentences_all_lack_an_opinion_word_is_edited_as_before(voted_project, stub,
                                                                                        tmp_path):
    friday = "I watched it with my brother on Friday."
    _dataset_with_vote(voted_project, tmp_path, principal=("Friday",), spurious=("plot",),
                       review=friday + "  The cinema was cold.")
    sent = []
    _, rows = _run(voted_project, stub(reply=lambda body: sent.append(body) or scripted_reply(body)))
    assert {sentence_to_edit(b) for b in sent if _editing(b)} == {friday}
    assert "plain" not in rows[0]["meta"]["fields"][0]


def test_a_member_that_does_not_explain_still_judges(voted_project, stub):
    """The vote is two members' (the third only judges, as a top-layer MPNet on a CPU): the candidates are judged by
    all three, and the CLI's and the review tab's default judges are the same three."""
    from engine.attribution import VoteSettings, find_principal_words
    from engine.attribution.explainers import default_judges

    project = voted_project
    dataset = project.dataset("reviews")
    everyone = ["r:tiny-distilbert", "r:tiny-roberta", "r:tiny-mpnet"]
    ids = [int(r["id"]) for r in project.iter_examples(dataset.id)][:1]
    find_principal_words(project, dataset.id, everyone[:2], methods={"ig": {"n_steps": 8}},
                         vote=VoteSettings(k=3, rule="majority"), example_ids=ids)
    assert default_judges(project, dataset.id) == everyone  # the vote's members first
    assert default_judges(project, dataset.id, ["elsewhere"]) == ["elsewhere", *everyone]
    from engine.attribution.explainers import judges_in_training
    from engine.models.config import default_ensemble
    from engine.store.runs import recorded_run

    config = default_ensemble("r:", backbones=("tiny-distilbert", "tiny-roberta", "minilm-l6"))
    with recorded_run(project, "train", dataset.id, {"ensemble": config.to_dict()}):
        # the two stored members judge already; the one still training is named
        assert judges_in_training(project, dataset.id) == ["r:minilm-l6"]
    server = stub(reply=scripted_reply)
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url)
    result = generate_counterbias(project, dataset.id, ids, config, settings=GenerateSettings(swap_gender=False))
    made = [r for r in candidate_rows(project, dataset_id=dataset.id) if r["status"] != "failed"]
    assert result.created and made
    assert list(made[0]["scores"]["judge"]["members"]) == everyone
