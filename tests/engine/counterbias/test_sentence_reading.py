"""The LLM sentence reader on its own: strict answers, one reminder, memory, labels named "none", the registry."""

from __future__ import annotations

import doctest
import math

import pytest

from engine.counterbias import GenerateSettings, sentence_reading
from engine.counterbias.sentence_reading import SENTENCE_READERS, LLMReader, residual_sentences
from engine.counterbias.settings import GenerationConfigError
from engine.llm.cache import CachedClient
from engine.llm.config import LLMConfig
from engine.llm.registry import create_backend
from engine.store import Project


@pytest.fixture
def client(tmp_path, stub):
    """A reader's client over a loopback server whose answers the test sets in ``answers`` (sentence -> text)."""
    answers: dict[str, str] = {}
    sent: list[dict] = []

    def reply(body):
        sent.append(body)
        last = body["messages"][-1]["content"]
        if last.startswith("Answer with exactly one of these words"):
            return answers.get("REMINDER", "none")
        return answers.get(last.rsplit("Sentence to read: ", 1)[1], "none")

    server = stub(reply=reply)
    project = Project.create(tmp_path / "reader.cbproj")
    backend = create_backend(LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0))
    yield CachedClient(backend, project), answers, sent
    backend.close()
    project.close()


def test_answers_are_read_strictly_and_a_reminder_is_sent_once(client):
    cached, answers, sent = client
    answers.update({"What a joy.": "Answer: **Positive**.", "It drags.": "negative", "They meet in Rome.": "None.",
                    "Odd one.": "Mostly positive, I would say", "REMINDER": "I cannot say"})
    reader = LLMReader(cached, ["Negative", "Positive"], "sentiment of a review")
    assert reader.read(["What a joy.", "It drags.", "They meet in Rome.", "Odd one."]) == [
        "Positive", "Negative", "none", None]
    assert len(sent) == 5  # four readings and one reminder for the unusable answer
    assert sent[0]["messages"][-1]["content"].startswith("Task: sentiment of a review (labels: Negative, Positive; or "
                                                         "none).")
    polar = reader(["What a joy.", "It drags.", "They meet in Rome.", "Odd one."], "Positive")
    assert polar[:3] == [1.0, 0.0, 0.5] and math.isnan(polar[3])  # NaN: no verdict
    assert len(sent) == 5  # remembered: nothing sent again
    assert residual_sentences(reader, [("What a joy. It drags.", "Positive"), ("It drags.", "Negative")]) == [
        ["What a joy."], ["It drags."]]


def test_a_label_called_none_gets_another_word_for_none(client):
    cached, answers, sent = client
    answers.update({"Buy now!": "Spam", "See you at five.": "no-label", "Hello there.": "None"})
    reader = LLMReader(cached, ["None", "Spam"], "spam detection")
    assert reader.none == "no-label"
    assert reader.read(["Buy now!", "See you at five.", "Hello there."]) == ["Spam", "no-label", "None"]
    assert "(labels: None, Spam; or no-label)" in sent[0]["messages"][-1]["content"]


def test_readers_are_registered_by_name_and_settings_refuse_unknown_ones():
    assert SENTENCE_READERS.names()[:2] == ["llm", "members"]
    assert GenerateSettings().sentence_reader == "llm"
    assert GenerateSettings(sentence_reader="members").key() != GenerateSettings().key()
    with pytest.raises(GenerationConfigError, match="Unknown sentence reader 'oracle'") as err:
        GenerateSettings(sentence_reader="oracle")
    assert "llm, members" in err.value.hint


def test_the_doctests_hold():
    from engine.counterbias import opinion_words, phrase_swap
    from engine.generation import reconstruct
    from engine.generation.edit import select
    from engine.llm import label_answer

    for module in (sentence_reading, label_answer, opinion_words, phrase_swap, reconstruct, select):
        assert doctest.testmod(module).failed == 0


def test_opinion_words_are_phrases_of_the_sentence_and_remembered(tmp_path, stub):
    """The marking is untrusted data: only phrases found in the sentence count (as written there), at most
    :data:`MAX_PHRASES`, none of more than :data:`MAX_PHRASE_WORDS` words; ``none`` is an empty marking, an answer
    with no usable phrase is no verdict; each (sentence, label) is asked once."""
    from engine.counterbias.opinion_words import MAX_PHRASE_WORDS, OpinionFinder

    sent = []
    answers = {"The acting is FLAT and it lacks any direction.": "Answer: acting is flat, lacks any direction, wooden",
               "They meet in Rome.": "None.",
               "A lovely film.": "The film is a dull mess",
               "Long one here.": " ".join(["word"] * (MAX_PHRASE_WORDS + 1))}
    server = stub(reply=lambda body: sent.append(body) or answers[body["messages"][-1]["content"].rsplit(
        "Sentence: ", 1)[1]])
    project = Project.create(tmp_path / "marker.cbproj")
    backend = create_backend(LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0))
    try:
        finder = OpinionFinder(CachedClient(backend, project), ["Negative", "Positive"], "sentiment of a review")
        items = [(s, "Negative") for s in answers]
        assert finder.find(items) == [["acting is FLAT", "lacks any direction"], [], None, None]
        assert "Read as: Negative" in sent[0]["messages"][-1]["content"]
        assert finder.find(items[:2]) == [["acting is FLAT", "lacks any direction"], []] and len(sent) == 4
    finally:
        backend.close()
        project.close()


def test_a_phrase_swap_answer_is_a_short_replacement_and_a_lost_request_is_recorded(tmp_path, stub):
    """The swap answer is untrusted data: quotes and a prefix are stripped, the phrase itself or a whole sentence is
    no replacement; a request answered 500 (retries off) gives no replacement and is recorded as failed."""
    from engine.counterbias.phrase_swap import PhraseSwapper

    answers = {"a waste of money": 'Answer: "a great investment"', "dull": "dull",
               "boring": "The film was a joy from the first scene to the last one", "lost": "never sent"}
    sent = []

    def phrase(body):
        return body["messages"][-1]["content"].split("\nPhrase: ", 1)[1].split("\n", 1)[0]

    server = stub(lambda body, attempt: "500" if phrase(body) == "lost" else "ok",
                  reply=lambda body: sent.append(body) or answers[phrase(body)])
    project = Project.create(tmp_path / "swap.cbproj")
    backend = create_backend(LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0))
    try:
        swapper = PhraseSwapper(CachedClient(backend, project), ["Negative", "Positive"], "sentiment of a review")
        items = [("It is a waste of money, dull and boring, and lost.", p, "Negative", "Positive") for p in answers]
        assert swapper.swap(items) == ["a great investment", None, None, None]
        assert list(swapper.failed) == [items[3]]
        assert sent[0]["messages"][-1]["content"].endswith("Phrase: a waste of money\nFrom Negative to: Positive")
    finally:
        backend.close()
        project.close()
