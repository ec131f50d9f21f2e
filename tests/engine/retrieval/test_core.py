"""CORE end to end: real retrieval over IMDb sentences, guides of the target label, edits from a loopback LLM."""

from __future__ import annotations

import json

from engine.cli import main
from engine.counterbias import candidate_rows
from engine.counterbias.retrieve_edit import RetrievalSettings, core_edit, guides_for
from engine.counterbias.guided import GuidedSettings
from engine.llm.config import LLMConfig
from tests.engine.counterbias.scripted_llm import edit_sentence
from tests.engine.llm.conftest import stub  # noqa: F401
from tests.engine.retrieval.conftest import need_faiss


def _guided_user(body):
    return [m["content"] for m in body["messages"] if m["role"] == "user" and "\nText: " in m["content"]][-1]


def _reply(prompts):
    def reply(body):
        user = _guided_user(body)
        prompts.append(user)
        return edit_sentence(user.split("\nText: ", 1)[1])
    return reply


def test_guides_keep_only_excerpts_of_the_target_label():
    rows = [{"example_id": 7, "sentence_index": 0, "hits": [
                {"text": "A gripping, tender story.", "label": "pos", "score": 0.7},
                {"text": "Mildly amusing at best.", "label": "mid", "score": 0.9}]},
            {"example_id": 7, "sentence_index": 1, "hits": [
                {"text": "Superb acting throughout.", "label": "pos", "score": 0.8},
                {"text": "A gripping, tender story.", "label": "pos", "score": 0.6}]}]
    examples = {7: {"text": "A dull story. Wooden acting.", "label": "neg"}}
    guides = guides_for(rows, examples, ["neg", "mid", "pos"], targets="each", use_tagger=False)
    assert set(guides) == {(7, "pos"), (7, "mid")}
    pos = guides[(7, "pos")]
    assert pos.excerpts == ("Superb acting throughout.", "A gripping, tender story.")  # best first, each once
    assert pos.keywords == ("superb", "throughout", "gripping", "tender")  # the example's own words left out
    assert guides[(7, "mid")].excerpts == ("Mildly amusing at best.",)
    assert guides_for(rows, examples, ["neg", "mid", "pos"], targets="neg") == {}  # its own label is no target


def test_core_edit_retrieves_guides_and_edits_then_resumes(labelled_project, stub):  # noqa: F811
    need_faiss()
    project = labelled_project
    dataset = project.dataset("cad")
    ids = [int(r["id"]) for r in project.iter_examples(dataset.id)][:3]
    prompts: list[str] = []
    server = stub(reply=_reply(prompts))
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=0)
    retrieval = RetrievalSettings(corpus="imdb", model="judge", k=4, kind="flat")
    seen: list[float] = []
    result = core_edit(project, dataset.id, ids, config, retrieval, progress=lambda f, m: seen.append(f))
    assert result.retrieved > 0 and result.retrieval_skipped == 0
    assert result.guided + result.unguided == 3 and result.guided >= 1
    assert len(result.edit.created) + len(result.edit.failed) == 3
    assert seen == sorted(seen) and seen[-1] == 1.0
    rows = [r for r in candidate_rows(project, dataset_id=dataset.id) if r["method"] == "core"]
    assert len(rows) == 3
    stored = {(h["text"], h["label"]) for r in project.db.query("SELECT hits FROM retrievals")
              for h in json.loads(r["hits"])}
    for row in rows:
        guide = row["meta"]["guide"]
        if guide is None:
            continue
        # every excerpt shown beside the candidate was retrieved with the target label (never the example's own)
        assert all((e, row["target_label"]) in stored for e in guide["excerpts"])
        assert row["target_label"] != row["meta"]["original_label"]
    guided_prompts = [p for p in prompts if "Words from related texts:" in p]
    assert len(guided_prompts) == result.guided

    # a rerun retrieves nothing and sends nothing; other retrieval settings make new candidates
    sent = server.count
    again = core_edit(project, dataset.id, ids, config, retrieval)
    assert again.retrieved == 0 and again.retrieval_skipped == result.retrieved
    assert again.edit.skipped == len(result.edit.created) and server.count == sent
    wider = core_edit(project, dataset.id, ids[:1], config, RetrievalSettings(corpus="imdb", model="judge", k=6,
                                                                             kind="flat"))
    assert wider.retrieved > 0 and len(wider.edit.created) + len(wider.edit.failed) == 1
    assert GuidedSettings().key() != GuidedSettings(guides_from=retrieval.describe()).key()


def test_core_cli_and_its_user_errors(labelled_project, stub, capsys):  # noqa: F811
    need_faiss()
    path = str(labelled_project.path)
    labelled_project.close()
    server = stub(reply=_reply([]))
    llm = ["--backend", "openai", "--model", "stub", "--base-url", server.base_url]
    assert main(["-q", "core", path, "cad", "--limit", "2", "--corpus", "imdb", "--member", "judge",
                 "--kind", "flat", *llm]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "core" and out["created"] + out["failed"] == 2 and out["retrieved"] > 0
    assert main(["-q", "core", path, "cad", "--limit", "2", "--llm-only", *llm]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "llm" and out["created"] + out["failed"] == 2
    for argv, code in [(["core", path, "cad", *llm], "CB950"),                           # no corpus, not --llm-only
                       (["core", path, "cad", "--corpus", "nope", "--member", "judge", *llm], "CB952")]:
        assert main(["-q", *argv]) == 3, argv
        err = capsys.readouterr().err
        assert f"[{code}]" in err and "What to do:" in err and "Traceback" not in err


def test_generate_method_core_and_llm_are_the_core_verb(labelled_project, stub, capsys):  # noqa: F811
    """``generate --method core`` / ``--method llm`` make the candidates ``core`` / ``core --llm-only`` make, judged
    by the dataset's default judges like every method; another method's option is refused before any request."""
    need_faiss()
    path = str(labelled_project.path)
    labelled_project.close()
    server = stub(reply=_reply([]))
    llm = ["--backend", "openai", "--model", "stub", "--base-url", server.base_url]
    assert main(["-q", "generate", path, "cad", "--method", "core", "--limit", "2", "--corpus", "imdb",
                 "--member", "judge", "--kind", "flat", *llm]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "core" and out["created"] + out["failed"] == 2
    assert main(["-q", "generate", path, "cad", "--method", "llm", "--limit", "2", "--keywords", "4", *llm]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "llm" and out["created"] + out["failed"] == 2
    from engine.store import Project

    with Project.open(path) as project:
        made = [r for r in candidate_rows(project) if r["method"] in ("core", "llm") and r["status"] != "failed"]
    assert made and all((r["scores"].get("judge") or {}).get("members") for r in made)  # judged by default
    sent = server.count
    for argv, flag in [(["--method", "llm", "--corpus", "imdb"], "--corpus"),
                       (["--method", "core", "--corpus", "imdb", "--member", "judge", "--edit-polar", "0.5"],
                        "--edit-polar"),
                       (["--method", "llm", "--phrases", "3"], "--phrases"),
                       (["--method", "core", "--mode", "reconstruct"], "--mode"),
                       (["--method", "coba-edit", "--pattern", "[x]"], "--pattern")]:
        assert main(["-q", "generate", path, "cad", *argv, *llm]) == 3, argv
        err = capsys.readouterr().err
        assert "[CB801]" in err and flag in err and "What to do:" in err and "Traceback" not in err, argv
    assert server.count == sent
