"""Triple decomposition: the strict parser (on recorded real model outputs) and the resumable job."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.counterbias.triple_store import load_triples
from engine.counterbias.triples import extract_triples
from engine.errors import Cancelled
from engine.io import import_file
from engine.llm.base import ChatResult
from engine.llm.config import LLMConfig
from engine.llm.prompts import load_prompt
from engine.llm.local_backend import LocalBackend
from engine.llm.triple_format import MAX_TRIPLES_PER_ANSWER, Triple, is_grounded, parse_answer, parse_triples
from engine.progress import CancelToken
from tests.engine.llm.conftest import require_smollm2
from tests.engine.llm.stub_server import StubServer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "llm_outputs"
T = Triple("The plot", "is", "thin")

# ---------------------------------------------------------------------------- parser


@pytest.mark.parametrize("line", [
    "The plot | is | thin",
    "  The plot|is|thin  ",
    "1. The plot | is | thin",
    "12) The plot | is | thin",
    "(3) The plot | is | thin",
    "1-2. The plot | is | thin",
    "- The plot | is | thin",
    "* The plot | is | thin",
    "• The plot | is | thin",
    '"The plot | is | thin"',
    "`The plot | is | thin`",
    "“The plot | is | thin”",
    "The plot | is | thin.",
    "| The plot | is | thin |",
    "The plot | is | thin |",
    "**The plot** | is | **thin**",
    "Subject: The plot | Predicate: is | Object: thin",
    '1. "The plot" | "is" | "thin".',
])
def test_tolerated_forms(line):
    assert parse_triples(line) == ([T], [])


def test_fences_headers_tables_and_duplicates_are_ignored():
    text = ("```text\nTriples:\n| Subject | Predicate | Object |\n|---|:---:|---|\n"
            "1. The plot | is | thin\n2. the plot | IS | thin\n```\n**Output:**\n### Facts\n")
    assert parse_triples(text) == ([T], [])


@pytest.mark.parametrize("line, reason", [
    ("Sure! Here are the triples you asked for.", "prose"),
    ("The plot is thin", "prose"),
    ("The plot | is thin", "2 parts"),
    ("The plot | is | thin | sadly", "4 parts"),
    ("The plot |  | thin", "empty"),
    ("The plot | is | thin | sadly |", "4 parts"),
    ("| The plot | is |", "2 parts"),
    ("The plot | is |", "2 parts"),
    ("The plot | is | " + "very " * 40 + "thin", "object too long"),
    ("The plot | is, as I have been telling absolutely everyone who will listen to me, | thin", "predicate too long"),
    ("S" * 250 + " | is | thin", "subject too long"),
])
def test_malformed_lines_are_rejected_with_a_reason(line, reason):
    triples, rejected = parse_triples(line)
    assert triples == [] and len(rejected) == 1
    assert rejected[0].line == line.strip() and reason in rejected[0].reason


def test_too_many_triples_are_cut():
    text = "\n".join(f"Thing {i} | is | number {i}" for i in range(MAX_TRIPLES_PER_ANSWER + 3))
    triples, rejected = parse_triples(text)
    assert len(triples) == MAX_TRIPLES_PER_ANSWER and len(rejected) == 3


def test_output_is_data_never_code():
    hostile = "__import__('os').system('touch pwned') | eval | {{sentence}}\n$(rm -rf /) | is | `x`"
    triples, _ = parse_triples(hostile)
    assert triples[0] == Triple("__import__('os').system('touch pwned')", "eval", "{{sentence}}")
    assert not Path("pwned").exists()


def test_answer_cut_at_max_tokens_drops_its_last_line():
    result = ChatResult("The plot | is | thin\nThe acting | is | wood", finish_reason="length")
    triples, rejected = parse_answer(result)
    assert triples == [T] and rejected[-1].reason == "cut off at max_tokens"


def test_triples_must_come_from_the_sentence():
    sentence = "The plot is thin but the acting is superb."
    assert is_grounded(Triple("The acting", "is", "superb"), sentence)
    assert is_grounded(Triple("It", "has", "superb acting"), sentence)
    assert not is_grounded(Triple("I", "regret paying for", "the ticket"), sentence)
    result = ChatResult("The acting | is | superb\nI | walked out | after twenty minutes")
    triples, rejected = parse_answer(result, sentence)
    assert triples == [Triple("The acting", "is", "superb")]
    assert rejected[0].reason == "not grounded in the sentence"


# ---------------------------------------------------------------------------- recorded real outputs


def _fixture_cases():
    if not (FIXTURES / "cases.json").exists():
        return
    cases = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
    expected = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
    kinds = (("first", "file", "finish_reason"), ("repair", "repair_file", "repair_finish_reason"),
             ("zeroshot", "zeroshot_file", "zeroshot_finish_reason"))
    for case in cases:
        for model, out in case["outputs"].items():
            for kind, file_key, finish_key in kinds:
                if file_key in out:
                    key = f"{case['case']}/{model}/{kind}"
                    yield pytest.param(case["sentence"], out[file_key], out[finish_key], expected[key], id=key)


@pytest.mark.parametrize("sentence, file, finish, expected", list(_fixture_cases()))
def test_recorded_model_outputs_parse_as_checked_by_hand(sentence, file, finish, expected):
    raw = (FIXTURES / file).read_text(encoding="utf-8")
    triples, rejected = parse_triples(raw)
    assert [list(t) for t in triples] == expected["format_ok"]
    assert [r.line for r in rejected] == expected["rejected"]
    kept, _ = parse_answer(ChatResult(raw, finish_reason=finish), sentence)
    assert [list(t) for t in kept] == expected["kept"]


def test_fixture_set_covers_every_model_and_both_tasks():
    cases = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
    assert len(cases) == 15
    assert {m for c in cases for m in c["outputs"]} == {"smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"}
    assert any("NLI" in c["source"] for c in cases) and any("sentiment" in c["source"] for c in cases)


# ---------------------------------------------------------------------------- the job

_SENTENCE = re.compile(r"Sentence: (.*)")
_PROMPT_USER_TURNS = sum(m["role"] == "user" for m in load_prompt("triples").render(sentence="x"))


def stub_reply(body: dict) -> str:
    """Grounded triples for well-behaved sentences; prose for the marked ones."""
    user = [m["content"] for m in body["messages"] if m["role"] == "user"]
    sentence = _SENTENCE.search(user[-1]).group(1).strip()
    repairing = len(user) > _PROMPT_USER_TURNS  # the repair adds one user turn to the few-shot prompt
    if "BROKEN" in sentence or ("PROSE" in sentence and not repairing):
        return "Sure! This sentence is about a film."
    words = sentence.rstrip(".!?").split()
    return f"Triples:\n1. {' '.join(words[:2])} | {words[2]} | {' '.join(words[3:]) or words[-1]}"


def stub_plan(fail: set[str]):
    def plan(body: dict, attempt: int) -> str:
        last = body["messages"][-1]["content"]
        return "500" if any(marker in last for marker in fail) else "ok"

    return plan


@pytest.fixture
def sentiment(project, tmp_path):
    src = tmp_path / "reviews.jsonl"
    rows = [
        {"text": "The plot is thin. The acting is wooden.", "label": "neg"},
        {"text": "The score soars above everything.<br /><br />I loved every minute.", "label": "pos"},
        {"text": "The ending was PROSE at first.", "label": "pos"},
        {"text": "This film is BROKEN for the model.", "label": "neg"},
        {"text": "The cast FAIL500 here today. The music is fine.", "label": "pos"},
        {"text": "!!!", "label": "neg"},
    ]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    dataset = import_file(project, src).dataset
    ids = [r["id"] for r in project.iter_examples(dataset.id)]
    return dataset, ids


def stub_config(server: StubServer, **kwargs) -> LLMConfig:
    return LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=1, **kwargs)


def test_extract_stores_triples_records_failures_and_resumes(project, sentiment):
    dataset, ids = sentiment
    fail = {"FAIL500"}
    server = StubServer(stub_plan(fail), reply=stub_reply).start()
    try:
        seen = []
        result = extract_triples(project, dataset.id, None, stub_config(server),
                                 progress=lambda f, m="": seen.append(f))
        status = {i.example_id: i.status for i in result.items}
        assert status == {ids[0]: "done", ids[1]: "done", ids[2]: "done", ids[3]: "failed",
                          ids[4]: "failed", ids[5]: "empty"}
        assert seen[-1] == 1.0 and seen == sorted(seen)
        by_id = {i.example_id: i for i in result.items}
        # one repair for the prose answer that the repair fixed, one for the hopeless one, none else
        repaired = [s for i in result.items for s in i.sentences if s.repaired]
        assert sorted(s.text for s in repaired) == ["The ending was PROSE at first.", "This film is BROKEN for the model."]
        broken = by_id[ids[3]].sentences[0]
        assert broken.raw == ["Sure! This sentence is about a film."] * 2 and broken.rejected[0].reason.startswith("prose")
        assert not by_id[ids[3]].retriable and by_id[ids[4]].retriable
        assert by_id[ids[4]].sentences[0].error.error == "ServerError"
        assert sorted(result.failed_ids) == [ids[3], ids[4]]

        assert load_triples(project, ids[0]) == {"text": [[Triple("The plot", "is", "thin")],
                                                          [Triple("The acting", "is", "wooden")]]}
        assert load_triples(project, ids[1])["text"][1] == [Triple("I loved", "every", "minute")]
        rows = project.db.execute("SELECT DISTINCT run_id FROM triples").fetchall()
        assert rows == [(result.run_id,)]
        run = project.db.execute("SELECT kind, status, params, result FROM runs WHERE id = ?",
                                 [result.run_id]).fetchone()
        assert run[0] == "triples" and run[1] == "done"
        params, summary = json.loads(run[2]), json.loads(run[3])
        assert params["llm"]["base_url"] == server.base_url and params["prompt"]["name"] == "triples"
        assert (summary["done"], summary["failed"], summary["empty"]) == (3, 2, 1)
        assert {f["example_id"] for f in summary["failures"]} == {ids[3], ids[4]}
        assert summary["usage"]["completion_tokens"] > 0 and summary["sent"] == result.sent

        # resume: finished examples are skipped; failed ones run again, answered sentences from the cache
        fail.clear()
        before = server.count
        again = extract_triples(project, dataset.id, None, stub_config(server))
        assert sorted(again.skipped) == sorted([ids[0], ids[1], ids[2]])
        assert {i.example_id: i.status for i in again.items} == {ids[3]: "failed", ids[4]: "done", ids[5]: "empty"}
        # sent: the sentence that had failed with HTTP 500 (same request), and BROKEN asked anew with
        # another seed (first + repair), since its identical request would only return the cached prose
        assert server.count - before == 3
        assert again.cache_hits == 1  # the healthy sentence of ids[4]
        assert len(load_triples(project, ids[4])["text"]) == 2
        broken = next(i for i in again.items if i.example_id == ids[3]).sentences[0]
        assert broken.raw == ["Sure! This sentence is about a film."] * 2
        # after MAX_RESAMPLES runs the sentence is no longer sent: its last answers come from the cache
        from engine.counterbias.triples import MAX_RESAMPLES

        for _ in range(MAX_RESAMPLES):
            extract_triples(project, dataset.id, None, stub_config(server))
        before = server.count
        last = extract_triples(project, dataset.id, None, stub_config(server))
        assert server.count == before and last.sent == 0
    finally:
        server.close()


def test_pair_datasets_are_decomposed_per_field(project, tmp_path):
    src = tmp_path / "nli.tsv"
    src.write_text("premise\thypothesis\tlabel\nTwo dogs run across a field.\tThe dogs are asleep.\tcontradiction\n"
                   "A man reads.\tA man is reading.\tentailment\n")
    dataset = import_file(project, src).dataset
    first = next(project.iter_examples(dataset.id))["id"]
    with StubServer(reply=stub_reply) as server:
        result = extract_triples(project, dataset.id, [first], stub_config(server))
    [item] = result.items
    assert item.status == "done"
    assert load_triples(project, item.example_id) == {
        "hypothesis": [[Triple("The dogs", "are", "asleep")]],
        "premise": [[Triple("Two dogs", "run", "across a field")]],
    }


def test_cancel_keeps_finished_examples_and_marks_the_run(project, tmp_path):
    src = tmp_path / "many.csv"
    src.write_text("text,label\n" + "".join(f"Review number {i} is fine.,{'ab'[i % 2]}\n" for i in range(40)))
    dataset = import_file(project, src).dataset
    token = CancelToken()
    with StubServer(reply=stub_reply, latency=0.01) as server:
        def progress(fraction, message=""):
            if fraction >= 0.2:
                token.cancel()

        with pytest.raises(Cancelled):
            extract_triples(project, dataset.id, None, stub_config(server, concurrency=2), progress=progress,
                            cancel=token, chunk_size=4)
        stored = project.db.execute("SELECT COUNT(DISTINCT example_id) FROM triples").fetchone()[0]
        assert 4 <= stored < 40
        assert project.db.execute("SELECT status FROM runs").fetchone()[0] == "cancelled"
        rest = extract_triples(project, dataset.id, None, stub_config(server))
        assert len(rest.skipped) == stored and rest.count("done") == 40 - stored


def test_example_ids_select_a_subset(project, sentiment):
    dataset, ids = sentiment
    with StubServer(reply=stub_reply) as server:
        result = extract_triples(project, dataset.id, [ids[0], ids[0], ids[1]], stub_config(server))
    assert [i.example_id for i in result.items] == [ids[0], ids[1]]


def test_real_small_model_runs_the_whole_job(project, tmp_path):
    """SmolLM2-135M fails the task itself; the job must still finish and record every answer."""
    require_smollm2()
    src = tmp_path / "two.csv"
    src.write_text("text,label\nThe soundtrack is lovely.,pos\nTwo dogs run across a field.,neg\n")
    dataset = import_file(project, src).dataset
    config = LLMConfig(backend="local", model="smollm2-135m", params={"max_tokens": 40, "temperature": 0, "seed": 0},
                       options={"n_threads": 1, "n_ctx": 1024})
    backend = LocalBackend(config)
    try:
        result = extract_triples(project, dataset.id, None, config, backend=backend)
        assert len(result.items) == 2 and result.sent >= 2
        for item in result.items:
            assert item.status in ("done", "partial", "failed")
            assert all(s.raw for s in item.sentences)  # every raw answer kept
        failed = [i for i in result.items if i.status == "failed"]
        again = extract_triples(project, dataset.id, None, config, backend=backend)
        # done items are skipped; a failed sentence is asked anew with another seed (first + repair at most)
        assert again.sent <= 2 * sum(len(i.sentences) for i in failed)
        assert len(again.skipped) == len(result.items) - len(failed)
    finally:
        backend.close()


def test_triples_numbered_by_the_old_splitter_are_read_and_edited_with_the_new_numbering(project, tmp_path):
    """A project whose triples were extracted before glued sentences were cut apart ("won.It"): the rows keep
    their old index and splitter version 1; reading places each on the part of its sentence holding its words, and
    an edit of the example stores every row with the new numbering."""
    from engine.counterbias.triple_store import insert_triples, load_triple_records, replace_triples
    from engine.text.sentences import split_sentences

    src = tmp_path / "glued.csv"
    src.write_text('text,label\n"Fine cast. The hero won.The villain lost badly. Bye now.",pos\nDull.,neg\n')
    dataset = import_file(project, src).dataset
    example = next(project.iter_examples(dataset.id))["id"]
    assert split_sentences(project.examples([example])[0]["text"]) == [
        "Fine cast.", "The hero won.", "The villain lost badly.", "Bye now."]
    old = [("text", 0, [Triple("cast", "is", "fine")]),
           ("text", 1, [Triple("The hero", "won", "the fight"), Triple("The villain", "lost", "badly")]),
           ("text", 2, [Triple("I", "say", "bye now")])]
    project.writer.run(insert_triples, None, example, old)
    project.writer.run(lambda conn: conn.execute("UPDATE triples SET splitter = 1"))  # as stored before version 2
    assert load_triples(project, example) == {"text": [
        [Triple("cast", "is", "fine")], [Triple("The hero", "won", "the fight")],
        [Triple("The villain", "lost", "badly")], [Triple("I", "say", "bye now")]]}
    replace_triples(project, example, "text", 3, [Triple("Someone", "says", "bye")])
    rows = project.db.execute("SELECT sentence_index, subject, splitter FROM triples ORDER BY sentence_index").fetchall()
    assert [tuple(r) for r in rows] == [(0, "cast", 2), (1, "The hero", 2), (2, "The villain", 2), (3, "Someone", 2)]
    assert [r.sentence_index for r in load_triple_records(project, example)] == [0, 1, 2, 3]
