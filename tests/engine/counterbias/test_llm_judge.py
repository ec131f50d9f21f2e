"""The LLM judge over a real loopback OpenAI-compatible server: strict parsing, one repair, verdicts stored."""

from __future__ import annotations

import pytest

from engine.counterbias import GenerateSettings, candidate_rows, generate_counterbias
from engine.llm.config import LLMConfig
from engine.llm.errors import LLMError
from engine.verification.llm_judge import llm_judge_candidates
from tests.engine.counterbias.scripted_llm import scripted_reply

MEMBERS = ["r:tiny-distilbert", "r:tiny-roberta", "r:tiny-mpnet"]


def _made(project, stub):
    server = stub(reply=scripted_reply)
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0)
    dataset = project.dataset("reviews")
    generate_counterbias(project, dataset.id, None, config, settings=GenerateSettings(drop_prob=0.0), judge=MEMBERS)
    return dataset, [r for r in candidate_rows(project, dataset_id=dataset.id) if r["status"] != "failed"]


def test_llm_judge_answers_are_parsed_strictly_and_stored(voted_project, stub):
    project = voted_project
    dataset, rows = _made(project, stub)
    assert len(rows) >= 3
    for row in rows:  # generation judged every candidate and ran every check
        verdicts = row["scores"]["verdicts"]
        assert verdicts["label-flip"]["status"] in ("pass", "fail")
        assert verdicts["llm-judge"]["status"] == "skip"
        assert verdicts["refusal"] == {"status": "pass", "reason": ""}
    targets = {r["text"]: r["target_label"] for r in rows}
    ids = [r["id"] for r in rows]
    first, second, third = ids[0], ids[1], ids[2]
    by_id = {r["id"]: r for r in rows}

    def reply(body):
        user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        if "Sentence to read:" in user:  # the judge reads the sentences again (the residual check)
            return scripted_reply(body)
        if user.startswith("Answer with exactly one"):
            return "Sure! " + "x" if third_text in body["messages"][-3]["content"] else "Positive"
        text = user.split("Text: ", 1)[1]
        if text == by_id[first]["text"]:
            return f"Answer: **{targets[text]}**."  # decorated but exactly one label
        if text == by_id[second]["text"]:
            return "I would say it is mostly positive"  # unusable, then repaired
        if text == third_text:
            return "Both, really."  # unusable twice: recorded as unparsed
        return "Negative" if targets[text] == "Positive" else "Positive"  # disagrees

    third_text = by_id[third]["text"]
    judge = stub(reply=reply)
    config = LLMConfig(backend="openai", model="judge", base_url=judge.base_url, max_retries=0)
    result = llm_judge_candidates(project, ids, config)
    assert third in result.unparsed and not result.failed
    stored = {r["id"]: r["scores"] for r in candidate_rows(project, dataset_id=dataset.id)}
    assert stored[first]["llm_judge"]["label"] == by_id[first]["target_label"]
    assert stored[first]["verdicts"]["llm-judge"]["status"] == "pass"
    assert stored[second]["llm_judge"]["label"] == "Positive"  # the repaired answer
    assert stored[third]["llm_judge"]["label"] is None and stored[third]["verdicts"]["llm-judge"]["status"] == "skip"
    for cid in ids[3:]:
        assert stored[cid]["verdicts"]["llm-judge"]["status"] == "fail"
        assert stored[cid]["passes"] is False  # a failed LLM judge holds the candidate back
    assert result.judged == len(ids) - 1
    sent = judge.count
    llm_judge_candidates(project, ids, config)  # every answer comes from the project's cache
    assert judge.count == sent


def test_a_refused_key_stops_the_judge_at_once(voted_project, stub):
    project = voted_project
    _, rows = _made(project, stub)
    server = stub(lambda body, attempt: "401")
    config = LLMConfig(backend="openai", model="judge", base_url=server.base_url, max_retries=0, concurrency=1)
    with pytest.raises(LLMError):
        llm_judge_candidates(project, [r["id"] for r in rows], config)
    assert server.count <= 2  # stopped instead of spending on every candidate
    assert all("llm_judge" not in r["scores"] for r in candidate_rows(project))


def test_cli_verify(voted_project, stub, capsys):
    import json

    from engine.cli import main
    from engine.errors import EXIT_OK, EXIT_USER_ERROR

    project = voted_project
    _, rows = _made(project, stub)
    path = str(project.path)
    project.close()
    judge = stub(reply=lambda body: "Negative")
    capsys.readouterr()
    llm = ["--backend", "openai", "--model", "judge", "--base-url", judge.base_url]
    assert main(["-q", "verify", path, "reviews", "--llm-judge", *llm]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert out["candidates"] == len(rows) and out["members"] == MEMBERS
    assert sum(out["checks"]["llm-judge"].values()) == len(rows) and "pass" in out["checks"]["llm-judge"]
    assert "llm-judge" in out["required"] and out["llm_judge"]["judged"] == len(rows)
    assert main(["-q", "verify", path, "reviews", "--judge", "none", "--require", "refusal,copy"]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert out["checks"]["label-flip"] == {"skip": len(rows)} and out["required"][-2:] == ["refusal", "copy"]
    assert main(["-q", "verify", path, "reviews", "--require", "politeness"]) == EXIT_USER_ERROR
    assert "CB930" in capsys.readouterr().err
    assert main(["-q", "verify", path, "reviews", "--max-residual-share", "2"]) == EXIT_USER_ERROR
    assert "CB932" in capsys.readouterr().err
    assert main(["-q", "verify", path, "reviews", "--max-untouched", "-1"]) == EXIT_USER_ERROR
    assert "CB932" in capsys.readouterr().err
    assert main(["-q", "verify", path, "reviews", "--judge", "none", "--max-untouched", "0"]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert "untouched" in out["required"] and sum(out["checks"]["untouched"].values()) == len(rows)
    assert "skip" not in out["checks"]["untouched"]  # edit-mode candidates: each gets a verdict
    assert main(["-q", "verify", path, "reviews", "--agreement", "best"]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert sum(out["checks"]["member-agreement"].values()) == len(rows)
    from engine.store import Project

    with Project.open(path, readonly=True) as project:
        reasons = {r["scores"]["verdicts"]["member-agreement"]["reason"] for r in candidate_rows(project)
                   if r["status"] != "failed"}
    assert all("most accurate member" in reason for reason in reasons), reasons


def test_the_llm_judge_reads_the_sentences_of_candidates_made_without_the_reader(voted_project, stub):
    """Candidates made with the members' sentence reading carry no residual reading; the LLM judge reads their
    sentences, stores what still speaks for the original label, and the residual check uses it (kept when the
    ensemble judges the same text again)."""
    from engine.counterbias import CandidateFilter, judge_candidates
    from engine.text.sentences import split_sentences
    from tests.engine.counterbias.scripted_llm import read_sentence

    project = voted_project
    server = stub(reply=scripted_reply)
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0)
    dataset = project.dataset("reviews")
    generate_counterbias(project, dataset.id, None, config, judge=MEMBERS,
                         settings=GenerateSettings(drop_prob=0.0, sentence_reader="members"))
    rows = [r for r in candidate_rows(project, dataset_id=dataset.id) if r["status"] != "failed"]
    assert rows and all("residual" not in f for r in rows for f in r["meta"]["fields"])
    assert {r["scores"]["verdicts"]["residual"]["status"] for r in rows} == {"skip"}
    reads = []

    def reply(body):
        user = body["messages"][-1]["content"]
        if "Sentence to read:" in user:
            reads.append(user)
            return read_sentence(user)
        return "Positive"

    judge = stub(reply=reply)
    ids = [r["id"] for r in rows]
    llm_judge_candidates(project, ids, LLMConfig(backend="openai", model="judge", base_url=judge.base_url))
    assert reads
    stored = {r["id"]: r for r in candidate_rows(project, dataset_id=dataset.id)}
    statuses = {}
    for cid in ids:
        found = stored[cid]["scores"]["residual"]["sentences"]
        verdict = stored[cid]["scores"]["verdicts"]["residual"]
        statuses[cid] = verdict["status"]
        share = len(found) / len(split_sentences(stored[cid]["text"]))
        assert verdict["status"] == ("fail" if share > CandidateFilter().max_residual_share else "pass")
        assert all(s in stored[cid]["text"] for s in found)
    again = judge_candidates(project, ids, MEMBERS)
    assert {cid: s["verdicts"]["residual"]["status"] for cid, s in again.items()} == statuses


def test_the_llm_judge_reads_the_sentences_again_and_its_reading_decides_the_residual_check(voted_project, stub):
    """Candidates made with the LLM sentence reader carry its residual reading. Asked again with the generating
    model, the judge's readings are the generation's own (from the cache: no sentence reaches the server); asked
    with another model, that model reads every sentence (in one batch that moves the progress bar), and its reading
    decides the residual check (the reason names it)."""
    from engine.counterbias import CandidateFilter
    from engine.text.sentences import split_sentences

    project = voted_project
    reads = []

    def generating(body):
        if "Sentence to read:" in body["messages"][-1]["content"]:
            reads.append(body["messages"][-1]["content"])
        if "Text: " in body["messages"][-1]["content"]:
            return "Positive"
        return scripted_reply(body)

    server = stub(reply=generating)
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0)
    dataset = project.dataset("reviews")
    generate_counterbias(project, dataset.id, None, config, judge=MEMBERS, settings=GenerateSettings(drop_prob=0.0))
    rows = [r for r in candidate_rows(project, dataset_id=dataset.id) if r["status"] != "failed"]
    assert rows and all("residual" in r["meta"]["fields"][0] for r in rows)
    made = {r["id"]: r["meta"]["fields"][0]["residual"] for r in rows}
    ids = sorted(made)

    reads.clear()
    llm_judge_candidates(project, ids, config)
    assert not reads  # the generation's own requests: answered from the project's cache
    stored = {r["id"]: r["scores"] for r in candidate_rows(project, dataset_id=dataset.id)}
    assert {cid: stored[cid]["residual"]["sentences"] for cid in ids} == made

    stronger = []

    def strict(body):  # another model: every sentence still speaks for the original label
        user = body["messages"][-1]["content"]
        if "Sentence to read:" in user:
            stronger.append(user)
            original = next(r for r in rows if r["text"].find(user.split("Sentence to read: ", 1)[1].strip()) >= 0)
            return str(project.examples([original["example_id"]])[0]["label"])
        return "Positive"

    judge = stub(reply=strict)
    seen = []
    llm_judge_candidates(project, ids, LLMConfig(backend="openai", model="bigger", base_url=judge.base_url),
                         progress=lambda f, m: seen.append(f))
    assert stronger
    assert any(0.45 < f < 0.97 for f in seen), seen  # the readings move the bar (they are most of the requests)
    stored = {r["id"]: r for r in candidate_rows(project, dataset_id=dataset.id)}
    for cid in ids:
        text = stored[cid]["text"]
        assert stored[cid]["scores"]["residual"] == {"sentences": split_sentences(text), "model": "openai:bigger"}
        verdict = stored[cid]["scores"]["verdicts"]["residual"]
        assert verdict["status"] == "fail" and "read by the LLM judge, openai:bigger" in verdict["reason"]
        assert not CandidateFilter().passes(stored[cid]["scores"])
