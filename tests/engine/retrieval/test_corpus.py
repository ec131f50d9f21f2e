"""Corpus import: sentences split by the engine's splitter, deduplicated, resumable after a cancel."""

from __future__ import annotations

import gzip
import json

import pytest

from engine.errors import Cancelled
from engine.progress import CancelToken
from engine.retrieval.corpus import get_corpus, import_corpus, sentence_hash
from engine.retrieval.errors import CorpusNotFoundError, CorpusSourceError
from engine.text.sentences import split_sentences

REVIEWS = [
    "A wonderful film. The cast is superb!",
    "The cast is superb! But the plot drags.",          # first sentence repeats review 1's second
    "a WONDERFUL   film.",                               # same sentence, other case and spacing
    "Dull.<br /><br />Truly dull and far too long.",
    "Never again. 10/10 would not watch.",
    "The soundtrack is great. The ending is weak.",
    "I laughed twice. The ending is weak.",
]


def write_tsv(path, reviews):
    with open(path, "w", encoding="utf-8") as f:
        f.write("id\ttext\n")
        for i, text in enumerate(reviews):
            f.write(f"r{i}\t{text}\n")
    return path


def corpus_texts(project, name):
    corpus = get_corpus(project, name)
    return [r[0] for r in project.db.execute(
        "SELECT text FROM corpus_sentences WHERE corpus_id = ? ORDER BY position", [corpus.id]).fetchall()]


def test_import_splits_and_dedupes(project, tmp_path):
    result = import_corpus(project, "toy", write_tsv(tmp_path / "toy.tsv", REVIEWS))
    expected = []
    seen = set()
    for review in REVIEWS:
        for sentence in split_sentences(review):
            if sentence_hash(sentence) not in seen:
                seen.add(sentence_hash(sentence))
                expected.append(sentence)
    texts = corpus_texts(project, "toy")
    assert texts == expected
    assert "The cast is superb!" in texts and texts.count("The ending is weak.") == 1
    assert not any(t.lower().startswith("a wonderful   film") for t in texts)  # the variant was a duplicate
    total = sum(len(split_sentences(r)) for r in REVIEWS)
    assert result.sentences_added == len(expected) and result.duplicates == total - len(expected)
    assert result.finished and result.docs_read == len(REVIEWS)
    positions = [r[0] for r in project.db.execute("SELECT position FROM corpus_sentences ORDER BY position")]
    assert positions == list(range(len(expected)))
    # the same file again adds nothing; another file adds only its new sentences
    again = import_corpus(project, "toy", tmp_path / "toy.tsv")
    assert again.sentences_added == 0 and again.docs_read == 0
    more = import_corpus(project, "toy", write_tsv(tmp_path / "more.tsv", ["The ending is weak. A new line here."]))
    assert (more.sentences_added, more.duplicates) == (1, 1)
    assert get_corpus(project, "toy").sentence_count == len(expected) + 1


def test_cancelled_import_resumes_where_it_stopped(project, tmp_path):
    reviews = [f"Review number {i} is here. It says thing {i % 5}. Shared closing words." for i in range(40)]
    src = write_tsv(tmp_path / "many.tsv", reviews)
    import_corpus(project, "whole", src, batch_docs=7)
    token = CancelToken()
    calls = []

    def cancel_after_two(fraction, message=""):
        calls.append(fraction)
        if len(calls) == 2:
            token.cancel()

    with pytest.raises(Cancelled):
        import_corpus(project, "parts", src, batch_docs=7, progress=cancel_after_two, cancel=token)
    partial = get_corpus(project, "parts")
    assert 0 < partial.sentence_count < get_corpus(project, "whole").sentence_count
    resumed = import_corpus(project, "parts", src, batch_docs=7)
    assert resumed.resumed_from == 14 and resumed.docs_read == 26 and resumed.finished
    assert corpus_texts(project, "parts") == corpus_texts(project, "whole")
    assert get_corpus(project, "parts").version > partial.version


def test_limit_docs_then_rest(project, tmp_path):
    src = tmp_path / "docs.jsonl.gz"
    with gzip.open(src, "wt", encoding="utf-8") as f:
        for i in range(10):
            f.write(json.dumps({"review": f"Sentence {i} of a review. Another one number {i}."}) + "\n")
    first = import_corpus(project, "j", src, limit_docs=4)
    assert (first.docs_read, first.finished, first.sentences_added) == (4, False, 8)
    rest = import_corpus(project, "j", src)
    assert (rest.resumed_from, rest.docs_read, rest.finished) == (4, 6, True)
    assert get_corpus(project, "j").sentence_count == 20


def test_plain_text_and_named_errors(project, tmp_path):
    txt = tmp_path / "lines.txt"
    txt.write_text("First document here. It has two sentences.\n\nSecond document.\n", encoding="utf-8")
    assert import_corpus(project, "plain", txt).sentences_added == 3
    two = tmp_path / "two.csv"
    two.write_text("title,body_text\nA,Some text.\n", encoding="utf-8")
    with pytest.raises(CorpusSourceError) as err:
        import_corpus(project, "bad", two)
    assert err.value.code == "CB954" and "--text-col" in err.value.hint
    assert import_corpus(project, "good", two, text_column="body_text").sentences_added == 1
    with pytest.raises(CorpusNotFoundError):
        get_corpus(project, "nope")
