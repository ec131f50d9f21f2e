"""A tiny downstream evaluation on a real project file: stored, reloaded, resumed; the CLI verbs."""

from __future__ import annotations

import json
import sqlite3

import pytest

from engine.cli import main
from engine.errors import Cancelled
from engine.evaluation.classifiers import make_classifier
from engine.evaluation.conditions import parse_condition, resolve_condition
from engine.evaluation.diversity_report import dataset_diversity, pair_diversity
from engine.evaluation.errors import BadConditionError, ClassifierError, NoParentsError, NoTestSetsError
from engine.evaluation.experiment import run_evaluation
from engine.evaluation.results_store import load_results
from engine.evaluation.test_sets import mark_test_set, test_sets
from engine.io import ImportOptions, import_file
from engine.progress import CancelToken
from engine.store import Project
from engine.store.schema import now

POS = ["a great film", "wonderful acting and a great story", "great fun", "a wonderful moving story",
       "loved it, great", "wonderful, simply great"]
NEG = ["an awful film", "terrible acting and an awful story", "awful mess", "a terrible boring story",
       "hated it, awful", "terrible, simply awful"]


def _csv(path, rows):
    path.write_text("text,label\n" + "".join(f'"{t}",{lab}\n' for t, lab in rows), encoding="utf-8")
    return path


@pytest.fixture
def proj(tmp_path):
    path = tmp_path / "eval.cbproj"
    with Project.create(path) as p:
        import_file(p, _csv(tmp_path / "train.csv", [(t, "pos") for t in POS] + [(t, "neg") for t in NEG]),
                    options=ImportOptions(name="train", split="train"))
        import_file(p, _csv(tmp_path / "extra.csv", [("great great", "pos"), ("wonderful day", "pos"),
                                                       ("awful awful", "neg"), ("terrible day", "neg")]),
                    options=ImportOptions(name="extra", split="train"))
        import_file(p, _csv(tmp_path / "dev.csv", [("great story", "pos"), ("awful acting", "neg"),
                                                     ("wonderful", "pos"), ("terrible", "neg")]),
                    options=ImportOptions(name="dev", split="dev"))
        # counterfactual: the sentiment word flipped, the topic word kept
        import_file(p, _csv(tmp_path / "cf.csv", [("awful story", "neg"), ("great acting", "pos"),
                                                    ("boring but great", "pos")]),
                    options=ImportOptions(name="cf", split="test"))
    return path


def test_tiny_evaluation_stored_reloaded_and_resumed(proj):
    conditions = [parse_condition("base=train:train"), parse_condition("size=train:train+extra@2")]
    clf = make_classifier("tfidf-lr")
    with Project.open(proj) as p:
        with pytest.raises(NoTestSetsError):
            run_evaluation(p, conditions, clf, seeds=[0, 1])
        mark_test_set(p, "dev", "dev", "in-domain")
        mark_test_set(p, "cf", "", "counterfactual")
        seen = []
        result = run_evaluation(p, conditions, clf, seeds=[0, 1], progress=lambda f, m="": seen.append(f))
        assert result.computed == 8 and result.skipped == 0
        assert seen[-1] == 1.0 and all(0.0 <= f <= 1.0 for f in seen)
        # the size control samples 2 of the 4 extra rows, differently per seed
        a, b = resolve_condition(p, conditions[1], 0), resolve_condition(p, conditions[1], 1)
        assert len(a.example_ids) == len(b.example_ids) == 14 and a.example_ids != b.example_ids
    # a fresh process would see the same: reopen and reload
    with Project.open(proj) as p:
        stored = load_results(p)
        assert len(stored) == 8
        assert {(c.condition, c.seed, c.test_set) for c in stored} == {
            (c, s, t) for c in ("base", "size") for s in (0, 1) for t in ("dev:dev", "cf")}
        dev = [c for c in stored if c.test_set == "dev:dev" and c.condition == "base"]
        assert all(c.accuracy == 1.0 and c.n == 4 and c.train_rows == 12 for c in dev)
        assert {t.name: t.role for t in test_sets(p)} == {"dev:dev": "in-domain", "cf": "counterfactual"}
        again = run_evaluation(p, conditions, clf, seeds=[0, 1])
        assert again.computed == 0 and again.skipped == 8 and len(again.cells) == 8
        table = {(r.condition, r.test_set): r for r in again.table()}
        assert table[("base", "dev:dev")].accuracy.format() == "100.0 ± 0.0"
        assert table[("base", "cf")].seeds == (0, 1) and table[("base", "cf")].role == "counterfactual"
        # a new seed computes only its own cells
        more = run_evaluation(p, conditions, clf, seeds=[0, 1, 2])
        assert more.computed == 4 and more.skipped == 8 and len(more.cells) == 12


def test_cancel_keeps_finished_cells(proj):
    token = CancelToken()
    clf = make_classifier("tfidf-lr")

    def progress(fraction, message=""):
        if "seed 1" in message:
            token.cancel()

    with Project.open(proj) as p:
        test = mark_test_set(p, "dev", "dev")
        with pytest.raises(Cancelled):
            run_evaluation(p, [parse_condition("base=train")], clf, seeds=[0, 1], tests=[test],
                           progress=progress, cancel=token)
        assert [c.seed for c in load_results(p)] == [0]
        assert run_evaluation(p, [parse_condition("base=train")], clf, seeds=[0, 1], tests=[test]).computed == 1


def test_bad_inputs_are_named(proj):
    for text in ("no-equals", "x=", "x=train@many", "x=train@0"):
        with pytest.raises(BadConditionError):
            parse_condition(text)
    with pytest.raises(ClassifierError):
        make_classifier("forest")
    with pytest.raises(ClassifierError):
        make_classifier("tfidf-lr", depth=3)
    with Project.open(proj) as p, pytest.raises(BadConditionError, match="no rows in split"):
        resolve_condition(p, parse_condition("x=train:dev"), 0)


def test_cli_evaluate_and_exit_codes(proj, tmp_path, capsys):
    out = tmp_path / "table.csv"
    code = main(["-q", "evaluate", str(proj), "--train", "base=train:train", "--test", "dev:dev",
                 "--test", "cf=counterfactual", "--seeds", "2", "--out", str(out), "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["computed"] == 4 and {r["test_set"] for r in data["rows"]} == {"dev:dev", "cf"}
    assert out.read_text(encoding="utf-8").startswith("condition,classifier,test_set,role")
    assert main(["-q", "evaluate", str(proj), "--train", "base=train:train", "--seeds", "2"]) == 0
    assert "0 cells computed, 4 already stored" in capsys.readouterr().out
    for bad in (["--train", "oops"], ["--train", "b=nosuch"], ["--train", "b=train", "--test", "dev=sideways"],
                ["--train", "b=train", "--classifier", "forest"], ["--train", "b=train", "--seeds", "0"]):
        assert main(["-q", "evaluate", str(proj), *bad]) == 3, bad
        err = capsys.readouterr().err
        assert "error: [CB" in err and "What to do:" in err and "Traceback" not in err
    assert main(["-q", "diversity", str(proj), "train", "--no-embeddings"]) == 3
    assert "CB910" in capsys.readouterr().err


def _add_edits(path, pairs):
    """An augmented version of 'train': generated rows with parent_id (as augment.py writes them)."""
    conn = sqlite3.connect(path)
    with conn:
        base = conn.execute("SELECT id FROM datasets WHERE name = 'train'").fetchone()[0]
        members = [r[0] for r in conn.execute(
            "SELECT example_id FROM dataset_members WHERE dataset_id = ? ORDER BY position", (base,))]
        cur = conn.execute("INSERT INTO datasets (name, kind, parent_id, task, labels, row_count, created_at) "
                           "VALUES ('train+cb', 'augmented', ?, 'single', '[\"neg\", \"pos\"]', 0, ?)", (base, now()))
        new = cur.lastrowid
        ids = list(members)
        for parent_pos, text, label in pairs:
            ids.append(conn.execute(
                "INSERT INTO examples (dataset_id, text, label, split, source, method, parent_id, target_label, "
                "created_at) VALUES (?, ?, ?, 'train', 'augmented', 'coba', ?, ?, ?)",
                (new, text, label, members[parent_pos], label, now())).lastrowid)
        conn.executemany("INSERT INTO dataset_members VALUES (?, ?, ?)", [(new, i, e) for i, e in enumerate(ids)])
        conn.execute("UPDATE datasets SET row_count = ? WHERE id = ?", (len(ids), new))
    conn.close()


def test_diversity_of_an_augmented_version(proj, capsys):
    # parents: "a great film" (pos 0) and "an awful film" (neg 0)
    _add_edits(proj, [(0, "a terrible film", "neg"), (6, "an excellent film", "pos")])
    with Project.open(proj) as p:
        report = dataset_diversity(p, "train+cb", embeddings=False,
                                   judge=lambda texts: ["neg" if "terrible" in t else "neg" for t in texts])
    assert report.pairs == 2
    assert report.edit_distance == pytest.approx((1 / 3 + 1 / 3) / 2)
    assert report.distinct_1 == pytest.approx(5 / 6)  # a terrible film an excellent film
    assert report.flip_rate == 0.5
    assert main(["-q", "diversity", str(proj), "train+cb", "--no-embeddings", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pairs"] == 2
    with pytest.raises(NoParentsError):
        pair_diversity(["x"], ["y"], embeddings=False)


def test_embedding_closeness_with_minilm():
    pytest.importorskip("sentence_transformers")
    report = pair_diversity(["the film was great", "the food was cold"], ["the film was bad", "the food was hot"],
                            pc_k=1)
    assert 0.3 < report.cosine < 1.0
    assert report.pc_share == pytest.approx(1.0)  # two points span one direction


def test_backbone_classifier_trains_through_the_engine(proj):
    pytest.importorskip("torch")
    clf = make_classifier("backbone:tiny-bert-missing")
    with Project.open(proj) as p:
        test = mark_test_set(p, "dev", "dev")
        with pytest.raises(ClassifierError):
            run_evaluation(p, [parse_condition("base=train:train")], clf, seeds=[0], tests=[test])
        clf = make_classifier("backbone:tiny-distilbert", train={"epochs": 1, "max_length": 16, "batch_size": 8})
        result = run_evaluation(p, [parse_condition("base=train:train")], clf, seeds=[0], tests=[test])
        assert result.computed == 1 and result.cells[0].n == 4
        names = [r["name"] for r in p.db.query("SELECT name FROM models")]
        assert len(names) == 1 and names[0].startswith("eval-tiny-distilbert-fast-cpu-")
        assert run_evaluation(p, [parse_condition("base=train:train")], clf, seeds=[0], tests=[test]).skipped == 1
        with pytest.raises(BadConditionError, match="train-split rows"):
            run_evaluation(p, [parse_condition("d=dev")], clf, seeds=[0], tests=[test])
