"""The simulation end to end on a small CAD NLI sample: stored, reloaded, resumed; the data builders; the CLI."""

from __future__ import annotations

import json

import pytest

from engine.active.counterfactuals import StoredCounterfactuals
from engine.active.datasets import build_cad_nli, build_imdb_fine, cad_nli_revisions, store_cad_counterfactuals
from engine.active.errors import BadShotsError, PoolError
from engine.active.simulation import load_cells, simulate
from engine.cli import main
from engine.errors import Cancelled
from engine.io import ImportOptions, import_file
from engine.progress import CancelToken
from engine.store import Project

STRATEGIES = ["random", "cluster", "counterfactual"]


@pytest.fixture
def cad(shared_data, tmp_path):
    """A project holding 90 CAD NLI originals (hypothesis as the text) and their human counterfactuals."""
    nli = shared_data / "cad" / "NLI"
    path = tmp_path / "al.cbproj"
    with Project.create(path) as p:
        result = import_file(p, build_cad_nli(nli, tmp_path / "cad.csv", n=90, seed=3),
                             options=ImportOptions(name="cad"))
        assert result.rows == 90 and set(result.label_counts) == {"entailment", "neutral", "contradiction"}
        assert store_cad_counterfactuals(p, "cad", nli) == 180  # two revised hypotheses per pair
        assert store_cad_counterfactuals(p, "cad", nli) == 0
    return path


def test_simulation_stored_reloaded_and_resumed(cad):
    with Project.open(cad) as p:
        seen = []
        result = simulate(p, "cad", strategies=STRATEGIES, shots=[20, 10], seeds=2, learner="embed-lr",
                          counterfactuals=StoredCounterfactuals(p), progress=lambda f, m="": seen.append(f))
        assert result.computed == 12 and result.skipped == 0 and len(result.cells) == 12
        assert result.shots == (10, 20) and result.pool_size + result.test_size == 90 and result.test_size == 27
        assert seen[-1] == 1.0 and all(0.0 <= f <= 1.0 for f in seen)
        by = {(c.strategy, c.seed, c.shots): c for c in result.cells}
        for seed in (0, 1):
            # the counterfactual strategy annotates what random annotates, plus two CAD revisions per example
            assert by[("counterfactual", seed, 20)].selected == by[("random", seed, 20)].selected
            assert by[("counterfactual", seed, 20)].added == 40 and by[("counterfactual", seed, 20)].train_rows == 60
            assert by[("random", seed, 10)].selected == by[("random", seed, 20)].selected[:10]
            assert by[("random", seed, 20)].added == 0
        assert by[("random", 0, 10)].selected != by[("random", 1, 10)].selected
        assert all(0.0 <= c.macro_f1 <= 1.0 and c.n_test == 27 for c in result.cells)
        assert (p.files_dir / "active" / "minilm-embeddings.npz").is_file()
    with Project.open(cad) as p:  # a fresh process sees the same cells
        again = simulate(p, "cad", strategies=STRATEGIES, shots=[10, 20], seeds=2,
                         counterfactuals=StoredCounterfactuals(p))
        assert again.computed == 0 and again.skipped == 12
        assert set(again.cells) == set(result.cells)
        more = simulate(p, "cad", strategies=["random"], shots=[10, 20, 30], seeds=2)
        assert more.computed == 2 and more.skipped == 4
        table = {r.strategy: r for r in again.table()}
        assert table["counterfactual"].n_seeds == (2, 2) and table["counterfactual"].added == (20.0, 40.0)
        text = again.format_table()
        assert "counterfactual" in text and "±" in text
        # another learner or only verified candidates is another cell
        other = simulate(p, "cad", strategies=["random"], shots=[10], seeds=1, learner="tfidf-lr")
        assert other.computed == 1


def test_plot_and_csv(cad, tmp_path):
    with Project.open(cad) as p:
        result = simulate(p, "cad", strategies=["random", "cluster"], shots=[10, 20], seeds=2, learner="tfidf-lr")
    png = result.plot(tmp_path / "curve.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    rows = result.write_csv(tmp_path / "t.csv").read_text().splitlines()
    assert rows[0].startswith("strategy,shots,macro_f1_mean,macro_f1_sd") and len(rows) == 5


def test_cancel_keeps_finished_cells(cad):
    token = CancelToken()

    def progress(fraction, message=""):
        if "seed 0, 20 shots" in message:
            token.cancel()

    with Project.open(cad) as p:
        with pytest.raises(Cancelled):
            simulate(p, "cad", strategies=["random"], shots=[10, 20], seeds=2, learner="tfidf-lr", progress=progress,
                     cancel=token)
        setup = next(iter(p.db.query("SELECT setup_key FROM al_results")))["setup_key"]
        assert [(c.seed, c.shots) for c in load_cells(p, setup)] == [(0, 10), (0, 20)]
        assert simulate(p, "cad", strategies=["random"], shots=[10, 20], seeds=2, learner="tfidf-lr").computed == 2


def test_bad_inputs_are_named(cad):
    with Project.open(cad) as p:
        with pytest.raises(BadShotsError):
            simulate(p, "cad", shots=[0, 10])
        with pytest.raises(BadShotsError):
            simulate(p, "cad", shots=[10, 500], strategies=["random"])
        with pytest.raises(BadShotsError):
            simulate(p, "cad", seeds=0)
        with pytest.raises(PoolError):
            simulate(p, "cad", test_split="test", strategies=["random"])


def test_builders(shared_data, tmp_path):
    import csv

    out = build_imdb_fine(shared_data / "imdb_maas" / "train.tsv.gz", tmp_path / "imdb.csv", n=40, seed=1)
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == 40 and "<br" not in "".join(r["text"] for r in rows)
    counts = {lab: sum(r["label"] == lab for r in rows) for lab in {r["label"] for r in rows}}
    assert counts == {"very negative": 10, "negative": 10, "positive": 10, "very positive": 10}
    band = {"very negative": (1, 2), "negative": (3, 4), "positive": (7, 8), "very positive": (9, 10)}
    assert all(band[r["label"]][0] <= int(r["rating"]) <= band[r["label"]][1] for r in rows)
    again = build_imdb_fine(shared_data / "imdb_maas" / "train.tsv.gz", tmp_path / "imdb2.csv", n=40, seed=1)
    assert again.read_bytes() == out.read_bytes()
    short = build_imdb_fine(shared_data / "imdb_maas" / "train.tsv.gz", tmp_path / "short.csv", n=40, seed=1,
                            max_words=60)
    short_rows = list(csv.DictReader(short.open(encoding="utf-8")))
    assert len(short_rows) == 40 and max(len(r["text"].split()) for r in short_rows) <= 60
    assert not {r["id"] for r in short_rows} <= {r["id"] for r in rows}  # drawn among the short reviews
    pairs = build_cad_nli(shared_data / "cad" / "NLI", tmp_path / "pairs.csv", mode="pair", split="dev", n=None)
    header, *body = list(csv.reader(pairs.open(encoding="utf-8")))
    assert header == ["id", "premise", "hypothesis", "label"] and len(body) == 200
    revisions = cad_nli_revisions(shared_data / "cad" / "NLI", "dev")
    first = revisions[body[0][0]]
    assert {lab for _, _, lab in first} == {"entailment", "neutral", "contradiction"} - {body[0][3]}
    assert all(premise == body[0][1] for premise, _, _ in first)


def test_pair_dataset_with_counterfactual_pairs(shared_data, tmp_path):
    nli = shared_data / "cad" / "NLI"
    with Project.create(tmp_path / "pairs.cbproj") as p:
        import_file(p, build_cad_nli(nli, tmp_path / "p.csv", mode="pair", n=60, seed=0),
                    options=ImportOptions(name="pairs"))
        store_cad_counterfactuals(p, "pairs", nli)
        ids = [int(r["id"]) for r in p.iter_examples(p.dataset("pairs").id)][:2]
        found = StoredCounterfactuals(p)(ids)
        premise = p.examples(ids[:1])[0]["premise"]
        assert len(found[ids[0]]) == 2 and all(t[0] == premise and len(t) == 2 for t, _ in found[ids[0]])
        result = simulate(p, "pairs", strategies=["random", "counterfactual"], shots=[10], seeds=1,
                          learner="tfidf-lr", counterfactuals=StoredCounterfactuals(p))
        assert {c.strategy: c.added for c in result.cells} == {"random": 0, "counterfactual": 20}


def test_cli_exit_codes_and_output(cad, shared_data, tmp_path, capsys):
    code = main(["-q", "al-simulate", str(cad), "cad", "--shots", "10,20", "--seeds", "2", "--learner", "tfidf-lr",
                 "--strategies", "random,counterfactual", "--json", "--plot", str(tmp_path / "c.png")])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["computed"] == 8 and (tmp_path / "c.png").is_file()
    assert [r["strategy"] for r in out["table"]] == ["random", "counterfactual"] and out["notes"] == []
    assert main(["-q", "al-simulate", str(cad), "cad", "--shots", "10,20", "--seeds", "2", "--learner", "tfidf-lr",
                 "--strategies", "random,counterfactual"]) == 0
    text = capsys.readouterr().out
    assert "0 cells computed, 8 already stored" in text and "random" in text
    # no candidates of that method: the note says the counterfactual strategy added nothing
    assert main(["-q", "al-simulate", str(cad), "cad", "--shots", "10", "--seeds", "1", "--learner", "tfidf-lr",
                 "--strategies", "counterfactual", "--method", "core"]) == 0
    assert "note: counterfactual: no counterfactuals" in capsys.readouterr().out
    for argv, code_ in [(["--shots", "10,x"], "CB993"), (["--strategies", "random,uncertain"], "CB991"),
                        (["--counterfactuals", "magic"], "CB990"), (["--learner", "forest"], "CB992"),
                        (["--shots", "10,900"], "CB993"), (["--seeds", "0"], "CB993"),
                        (["--test-split", "nope"], "CB994"), (["--plot", str(tmp_path / "no" / "x.png")], "CB990")]:
        assert main(["-q", "al-simulate", str(cad), "cad", "--strategies", "random", *argv]) == 3, argv
        err = capsys.readouterr().err
        assert f"[{code_}]" in err and "Traceback" not in err, (argv, err)
    # pattern-keeping counterfactuals need the dataset's patterns: a named error before any request
    assert main(["-q", "al-simulate", str(cad), "cad", "--strategies", "counterfactual", "--counterfactuals", "vt",
                 "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]) == 3
    err = capsys.readouterr().err
    assert "[CB995]" in err and "counterbias patterns" in err and "Traceback" not in err
    assert main(["-q", "al-data", str(cad), "mnist"]) == 3
    assert "[CB996]" in capsys.readouterr().err
    assert main(["-q", "al-data", str(cad), "cad-nli", "--n", "30", "--name", "small", "--with-counterfactuals",
                 "--data", str(shared_data)]) == 0
    assert "imported 30 rows as 'small'" in capsys.readouterr().out
