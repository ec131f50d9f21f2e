"""The demonstration pool: pairs imported from a file (CAD's paired format), accepted candidates, their sentence
edits retrieved by MiniLM as the first try's examples (in place of the invented ones), the leak guard widened to
them, what a candidate records, and the invented examples kept when the pool is empty."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from engine.counterbias import GenerateSettings, candidate_rows
from engine.counterbias.review import set_decision
from engine.generation.demo_pairs import DemoPairError, import_pairs, pair_counts
from engine.generation.demos import DemoPool, sentence_edits, text_hash
from tests.engine.counterbias.scripted_llm import edit_sentence, scripted_reply, sentence_to_edit
from tests.engine.counterbias.test_edit_mode import TARGET, _dataset_with_vote, _run

CAD_PAIRED = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "cad" / "sentiment" / "combined" / \
    "paired" / "train_paired.tsv"

#: Written for these tests: a human pair whose middle sentence is edited, near the test review's TARGET sentence.
PAIR = [("The acting is great and the score is lovely. We left at nine.", "Positive", "1"),
        ("The acting is dreadful and the score is grating. We left at nine.", "Negative", "1"),
        ("A sunny film about a brave family.", "Positive", "2"),
        ("A grim film about a cowardly family.", "Negative", "2"),
        ("An orphan row.", "Positive", "3")]


def _pair_file(tmp_path: Path, rows=PAIR) -> Path:
    path = tmp_path / "pairs.tsv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter="\t")
        w.writerow(["Sentiment", "Text", "batch_id"])
        w.writerows([(label, text, group) for text, label, group in rows])
    return path


def _import(project, dataset, path):
    return import_pairs(project, dataset.id, path, text_column="Text", label_column="Sentiment",
                        group_column="batch_id")


def test_sentence_edits_keep_one_for_one_rewrites_only():
    assert sentence_edits("I saw it. The plot is dull. Bye.", "I saw it. The plot is gripping. Bye.") == [
        (1, "The plot is dull.", "The plot is gripping.")]
    # a sentence rewritten from scratch is not an edit
    assert sentence_edits("I saw it. The plot is dull and slow.", "I saw it. Nobody should miss this gem.") == []
    # an added sentence has nothing to pair with
    assert sentence_edits("The plot is dull.", "The plot is dull. But the cast is superb.") == []


@pytest.mark.skipif(not CAD_PAIRED.exists(), reason="../shared/data/cad is not here")
def test_cad_pairs_import_once_and_give_sentence_edits(voted_project, tmp_path):
    dataset = _dataset_with_vote(voted_project, tmp_path)
    head = tmp_path / "cad_head.tsv"
    head.write_text("\n".join(CAD_PAIRED.read_text(encoding="utf-8").splitlines()[:61]) + "\n", encoding="utf-8")
    done = _import(voted_project, dataset, head)
    assert (done.read, done.added) == (30, 30)
    again = _import(voted_project, dataset, head)
    assert again.added == 0 and again.skipped == 30  # the same file adds nothing
    pool = DemoPool(voted_project, dataset.id)
    assert pool.refresh() > 30  # CAD's revisions edit several sentences of a review
    assert pool.refresh() == 0
    first = pool.demos[0]
    assert (first.label, first.target) == ("Negative", "Positive") and first.sentence != first.edited


def test_pair_file_errors_are_named(voted_project, tmp_path):
    dataset = _dataset_with_vote(voted_project, tmp_path)
    path = _pair_file(tmp_path)
    with pytest.raises(DemoPairError, match="no column"):
        import_pairs(voted_project, dataset.id, path, text_column="review", label_column="Sentiment",
                     group_column="batch_id")
    with pytest.raises(DemoPairError, match="not both"):
        import_pairs(voted_project, dataset.id, path, group_column="batch_id", parent_column="parent")
    same = _pair_file(tmp_path, [("Good.", "Positive", "1"), ("Fine.", "Positive", "1")])
    with pytest.raises(DemoPairError, match="no pair"):
        _import(voted_project, dataset, same)
    assert pair_counts(voted_project, dataset.id) == {"imported": 0, "accepted": 0}


def _edit_requests(sent):
    return [b for b in sent if sentence_to_edit(b) == TARGET]


def test_edit_requests_take_the_nearest_demonstrations_in_place_of_the_invented_ones(voted_project, stub, tmp_path):
    dataset = _dataset_with_vote(voted_project, tmp_path)
    sent = []
    server = stub(reply=lambda body: sent.append(body) or scripted_reply(body))
    result, rows = _run(voted_project, server, swap_gender=False)  # no pair yet: the invented examples
    first = _edit_requests(sent)[0]
    assert "lighthouse" in " ".join(m["content"] for m in first["messages"])
    assert "demos" not in rows[0]["meta"]["fields"][0]["edits"][0] and "demonstrations" not in result.summary()

    assert _import(voted_project, dataset, _pair_file(tmp_path)).added == 2
    voted_project.writer.run(lambda conn: conn.execute("DELETE FROM candidates"))
    sent.clear()
    result, rows = _run(voted_project, server, swap_gender=False, demonstrations=1)
    messages = _edit_requests(sent)[0]["messages"]
    text = " ".join(m["content"] for m in messages)
    assert "lighthouse" not in text and "The acting is great and the score is lovely." in text
    assert messages[2] == {"role": "assistant", "content": "The acting is dreadful and the score is grating."}
    assert len(messages) == 4  # system, the one demonstration, the real request
    edit = rows[0]["meta"]["fields"][0]["edits"][0]
    assert [d["source"] for d in edit["demos"]] == ["imported"]
    assert result.summary()["demonstrations"] == 2


def test_an_answer_copying_a_demonstration_is_a_leak(voted_project, stub, tmp_path):
    dataset = _dataset_with_vote(voted_project, tmp_path)
    _import(voted_project, dataset, _pair_file(tmp_path))
    copied = "The acting is dreadful and the score is grating."
    answers = iter([f"The plot is awful. {copied}"])

    def reply(body):
        if sentence_to_edit(body) == TARGET:
            return next(answers, None) or edit_sentence(TARGET)
        return scripted_reply(body)

    result, rows = _run(voted_project, stub(reply=reply), swap_gender=False)
    edit = rows[0]["meta"]["fields"][0]["edits"][0]
    assert "prompt leak" in edit["problems"] and "grating" not in rows[0]["text"]


def test_accepted_candidates_join_the_pool_and_a_text_never_sees_its_own(voted_project, stub, tmp_path):
    dataset = _dataset_with_vote(voted_project, tmp_path)
    _, rows = _run(voted_project, stub(reply=scripted_reply), swap_gender=False)
    pool = DemoPool(voted_project, dataset.id)
    assert pool.refresh() == 0 and len(pool) == 0
    set_decision(voted_project, rows[0]["id"], "accepted")
    assert pool.refresh() == 1
    demo = pool.demos[0]
    assert demo.id == f"candidate:{rows[0]['id']}:1" and demo.source == "accepted"
    assert pool.nearest("The story is great.", "Positive", "Negative", 2) == [demo]
    original = candidate_rows(voted_project, dataset_id=dataset.id)[0]
    own = text_hash(voted_project.examples([original["example_id"]])[0]["text"])
    assert pool.nearest("The story is great.", "Positive", "Negative", 2, exclude=own) == []
    assert pool.nearest("The story is great.", "Negative", "Positive", 2) == []  # the other way: none
    assert pool.nearest(TARGET, "Positive", "Negative", 2) == []  # the same sentence is no example of itself


def test_demonstrations_are_refused_where_they_have_no_effect():
    from engine.generate_settings import GenerationConfigError

    assert GenerateSettings(demonstrations=2).key() == GenerateSettings().key()
    assert GenerateSettings(demonstrations=0).key() != GenerateSettings().key()
    with pytest.raises(GenerationConfigError, match="no effect"):
        GenerateSettings(mode="reconstruct", demonstrations=3).validate()
    with pytest.raises(GenerationConfigError, match="out of range"):
        GenerateSettings(demonstrations=9)


def test_demos_verb_imports_counts_and_names_errors(voted_project, tmp_path, capsys):
    from engine.cli import main

    dataset = _dataset_with_vote(voted_project, tmp_path)
    path = _pair_file(tmp_path)
    project_path = str(voted_project.path)
    voted_project.close()
    assert main(["demos", project_path, dataset.name, "--import", str(path), "--group-column", "batch_id",
                 "--text-column", "Text", "--label-column", "Sentiment"]) == 0
    assert "3 pairs read, 2 added, 1 skipped" in capsys.readouterr().out
    assert main(["demos", project_path, dataset.name, "--json"]) == 0
    assert '"imported": 2' in capsys.readouterr().out
    assert main(["demos", project_path, dataset.name, "--import", str(path)]) == 3
    assert "CB840" in capsys.readouterr().err


def test_an_imported_pair_of_the_example_is_shown_as_its_human_counterfactual(voted_project, stub, tmp_path):
    from engine.counterbias.review import candidate_rows_with_originals
    from tests.engine.counterbias.test_edit_mode import REVIEW

    dataset = _dataset_with_vote(voted_project, tmp_path)
    human = REVIEW.replace("great and the music is lovely", "clumsy and the music is shrill")
    _import(voted_project, dataset, _pair_file(tmp_path, [(REVIEW, "Positive", "9"), (human, "Negative", "9")]))
    _run(voted_project, stub(reply=scripted_reply), swap_gender=False, demonstrations=0)
    row = candidate_rows_with_originals(voted_project, dataset.id)[0]
    assert row["human"] == [{"text": human, "target": "Negative", "source": "pairs.tsv"}]


def test_the_requests_of_each_stage_are_counted(voted_project, stub, tmp_path):
    _dataset_with_vote(voted_project, tmp_path)
    sent = []
    server = stub(reply=lambda body: sent.append(body) or scripted_reply(body))
    result, _ = _run(voted_project, server, swap_gender=False)
    by_stage = result.summary()["requests_by_stage"]
    assert sum(by_stage.values()) == result.sent + result.cache_hits == len(sent)
    assert by_stage["first"] >= 1 and set(by_stage) <= {"read", "mark", "first", "fresh", "swap", "residual"}
