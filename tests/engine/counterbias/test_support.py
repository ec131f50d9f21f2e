"""A triple must be supported by its sentence: no invented words, no dropped or added negation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.counterbias.support import support_problem
from engine.counterbias.triple_store import load_triples
from engine.counterbias.triples import extract_triples, read_answer
from engine.io import import_file
from engine.llm.base import ChatResult
from engine.llm.config import LLMConfig
from engine.llm.triple_format import Triple, parse_answer
from tests.engine.llm.stub_server import StubServer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "llm_outputs"


def _recorded():
    cases = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
    for case in cases:
        for model, out in case["outputs"].items():
            for file_key, finish_key in (("file", "finish_reason"), ("repair_file", "repair_finish_reason"),
                                         ("zeroshot_file", "zeroshot_finish_reason")):
                if file_key in out:
                    raw = (FIXTURES / out[file_key]).read_text(encoding="utf-8")
                    yield pytest.param(case["sentence"], ChatResult(raw, finish_reason=out[finish_key]),
                                       id=f"{case['case']}/{model}/{file_key}")


@pytest.mark.parametrize(("sentence", "answer"), list(_recorded()))
def test_recorded_answers_keep_their_faithful_triples(sentence, answer):
    """Real recorded outputs of the three bundled models, checked by hand: none states a reversed or
    invented fact, so the support check must keep every triple the parser keeps (no false alarms)."""
    assert read_answer(answer, sentence)[0] == parse_answer(answer, sentence)[0]


NOT_GOOD = "This movie is not very good."          # recorded case c03
CRIME = "I'm a big fan of the true crime genre, but I couldn't sit through this putrid piece."  # c07


@pytest.mark.parametrize(("sentence", "triple", "reason"), [
    # recorded answers (qwen2.5-coder-0.5b on c03, qwen2.5-coder-1.5b on c07), negation dropped by hand
    (NOT_GOOD, ("This movie", "is", "very good"), "negates"),
    (CRIME, ("I", "sat through", "this putrid piece"), "negates"),
    ("I did not like the ending.", ("I", "liked", "the ending"), "negates"),
    ("The film has no plot.", ("The film", "has", "a plot"), "negates"),
    ("He never disappoints.", ("He", "disappoints", "the audience"), "negates"),
    # a negation the sentence does not have
    ("The acting is superb.", ("The acting", "is not", "superb"), "does not have"),
    # invented words
    ("The plot is thin.", ("The director", "ruined", "the plot"), "not in the sentence (director)"),
    ("I saw this in the summer of 1990.", ("I", "saw", "a horror movie in the winter"), "not in the sentence"),
])
def test_unsupported_triples_are_rejected_with_a_reason(sentence, triple, reason):
    problem = support_problem(Triple(*triple), sentence)
    assert problem is not None and reason in problem


@pytest.mark.parametrize(("sentence", "triple"), [
    (NOT_GOOD, ("This movie", "is not", "very good")),
    (CRIME, ("I", "am a big fan of", "the true crime genre")),      # the other clause is not negated
    (CRIME, ("I", "couldn't sit through", "this putrid piece")),
    ("I did not like the ending.", ("I", "disliked", "the ending")),  # a paraphrase keeps the polarity
    ("The film has no plot.", ("The film", "lacks", "a plot")),
    ("It is not only funny but also moving.", ("It", "is", "funny")),
    ("I loved it.", ("I", "loved", "the film")),                      # one noun for a pronoun is allowed
    ("Battling his former employers, he wins.", ("He", "battles", "his former employer")),  # lemmas
])
def test_supported_triples_pass(sentence, triple):
    assert support_problem(Triple(*triple), sentence) is None


def test_read_answer_records_the_reason():
    triples, rejected = read_answer(ChatResult("This movie | is | very good\nThis movie | is not | very good"), NOT_GOOD)
    assert triples == [Triple("This movie", "is not", "very good")]
    assert rejected[0].line == "This movie | is | very good"
    assert rejected[0].reason.startswith("not supported by the sentence: the sentence negates it")


_SENTENCE = re.compile(r"Sentence: (.*)")


def test_a_reversed_answer_is_repaired_and_recorded(project, tmp_path):
    """The first answer drops the negation; the repair request gets the faithful triple."""
    src = tmp_path / "reviews.jsonl"
    src.write_text(json.dumps({"text": "I did not like the ending.", "label": "neg"}) + "\n"
                   + json.dumps({"text": "The plot is thin.", "label": "pos"}) + "\n")
    dataset = import_file(project, src).dataset

    def reply(body: dict) -> str:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        repairing = any(m["role"] == "assistant" and "| liked |" in m["content"] for m in body["messages"])
        assert _SENTENCE.search(users[-1]) or repairing
        if "Sentence: The plot is thin." in users[-1]:
            return "The plot | is | thin"
        return "I | did not like | the ending" if repairing else "I | liked | the ending"

    server = StubServer(reply=reply).start()
    try:
        config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=1)
        result = extract_triples(project, dataset.id, None, config)
    finally:
        server.close()
    record = result.items[0].sentences[0]
    assert record.repaired and record.raw == ["I | liked | the ending", "I | did not like | the ending"]
    assert result.items[0].status == "done"
    assert record.rejected[0].reason.startswith("not supported by the sentence: the sentence negates it")
    assert load_triples(project, result.items[0].example_id) == {"text": [[Triple("I", "did not like", "the ending")]]}
