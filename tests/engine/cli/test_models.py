"""CLI: train, attribute, vote and models on a real NLI sample with tiny members (fast)."""

from __future__ import annotations

import csv
import json

from engine.cli import main
from engine.errors import EXIT_OK, EXIT_USER_ERROR

TINY = "tiny-distilbert,tiny-roberta,tiny-mpnet"


def _nli_sample(shared_data, tmp_path, rows=120):
    src = shared_data / "cad/NLI/original/train.tsv"
    out = tmp_path / "nli.tsv"
    with open(src, newline="", encoding="utf-8") as f:
        reader = csv.reader(f, delimiter="\t")
        lines = [next(reader)] + [r for _, r in zip(range(rows), reader)]
    with open(out, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, delimiter="\t").writerows(lines)
    return out


def test_train_attribute_vote_and_hypothesis_only_feature(tmp_path, capsys, shared_data):
    proj = str(tmp_path / "p.cbproj")
    assert main(["-q", "init", proj]) == EXIT_OK
    assert main(["-q", "import", proj, str(_nli_sample(shared_data, tmp_path)), "--name", "nli"]) == EXIT_OK
    capsys.readouterr()

    args = ["-q", "train", proj, "nli", "--backbones", TINY, "--epochs", "1", "--max-length", "48", "--hypothesis-only"]
    assert main(args) == EXIT_OK
    trained = json.loads(capsys.readouterr().out)
    assert trained["threshold"] == 2
    names = [m["name"] for m in trained["members"]]
    assert names == ["nli:tiny-distilbert", "nli:tiny-roberta", "nli:tiny-mpnet", "nli:hypothesis-only"]
    assert all(0.0 <= m["dev_accuracy"] <= 1.0 and not m["reused"] for m in trained["members"])
    assert main(args) == EXIT_OK  # resume: every member is reused
    assert all(m["reused"] for m in json.loads(capsys.readouterr().out)["members"])

    assert main(["-q", "models", proj]) == EXIT_OK
    listed = {m["name"]: m for m in json.loads(capsys.readouterr().out)}
    assert listed["nli:hypothesis-only"]["inputs"] == "hypothesis"

    attribute = ["-q", "attribute", proj, "nli", "--limit", "6", "--ig-steps", "8"]
    assert main(attribute) == EXIT_OK
    first = json.loads(capsys.readouterr().out)
    assert {r["member"] for r in first} == {"nli:tiny-distilbert", "nli:tiny-roberta", "nli:tiny-mpnet"}
    assert all(r["computed"] == 6 for r in first)
    assert main(attribute) == EXIT_OK  # cached: nothing computed again
    assert all(r["computed"] == 0 and r["cached"] == 6 for r in json.loads(capsys.readouterr().out))

    out = tmp_path / "votes.jsonl"
    assert main(["-q", "vote", proj, "nli", "--limit", "6", "--ig-steps", "8", "-k", "3",
                 "--wordlist", "gender", "--out", str(out)]) == EXIT_OK
    voted = json.loads(capsys.readouterr().out)
    assert voted["n_examples"] == 12 and voted["principal"]  # counted per field: premise + hypothesis
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 12  # premise and hypothesis of 6 examples
    assert all(set(line["principal"]).isdisjoint(line["spurious"]) for line in lines)
    # another vote rule from the same cached scores: K principal words per field, the rule stored with the vote
    assert main(["-q", "vote", proj, "nli", "--limit", "6", "--ig-steps", "8", "-k", "3", "--rule", "z-prior",
                 "--prior-weight", "0.5", "--out", str(out)]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["vote_set"] != voted["vote_set"]
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all(len(line["principal"]) <= 3 for line in lines) and any(len(line["principal"]) == 3 for line in lines)
    assert main(["-q", "vote", proj, "nli", "--limit", "6", "--rule", "loudest"]) == EXIT_USER_ERROR
    assert "loudest" in capsys.readouterr().err

    assert main(["-q", "stats", proj, "nli", "--features", "null", "--min-count", "1"]) == EXIT_OK
    stats = json.loads(capsys.readouterr().out)
    tops = [f["feature"] for rows in stats["top"].values() for f in rows]
    assert any(f.startswith("hyp_only_pred=") for f in tops) or stats  # the feature is computed
    assert main(["-q", "stats", proj, "nli", "--hyp-only", "nli:hypothesis-only", "--out", str(tmp_path / "s.csv"),
                 "--features", "null", "--min-count", "1"]) == EXIT_OK
    with open(tmp_path / "s.csv", newline="", encoding="utf-8") as f:
        kinds = {r["kind"] for r in csv.DictReader(f)}
    assert "categorical" in kinds


def test_hypothesis_only_needs_pairs_and_vote_needs_members(tmp_path, capsys):
    proj = str(tmp_path / "p.cbproj")
    main(["-q", "init", proj])
    src = tmp_path / "d.csv"
    src.write_text("text,label\ngood film,pos\nbad film,neg\n")
    main(["-q", "import", proj, str(src), "--name", "d"])
    capsys.readouterr()
    assert main(["-q", "train", proj, "d", "--backbones", "tiny-distilbert", "--hypothesis-only"]) == EXIT_USER_ERROR
    assert "premise/hypothesis" in capsys.readouterr().err
    assert main(["-q", "vote", proj, "d"]) == EXIT_USER_ERROR
    assert "counterbias train" in capsys.readouterr().err


def test_vote_explains_with_the_fully_trained_members_unless_named(tmp_path, capsys, shared_data):
    """A member trained only on its top layer judges; ``vote`` without --members explains without it."""
    from engine.attribution.vote_store import vote_sets
    from engine.store import Project

    proj = str(tmp_path / "p.cbproj")
    main(["-q", "init", proj])
    main(["-q", "import", proj, str(_nli_sample(shared_data, tmp_path, rows=60)), "--name", "nli"])
    for backbone, preset in (("tiny-distilbert", "fast-cpu"), ("tiny-roberta", "fast-cpu"), ("tiny-electra", "top-cpu")):
        assert main(["-q", "train", proj, "nli", "--backbones", backbone, "--preset", preset, "--epochs", "1",
                     "--max-length", "48"]) == EXIT_OK
    capsys.readouterr()
    vote = ["-q", "vote", proj, "nli", "--limit", "4", "--ig-steps", "8"]
    assert main(vote) == EXIT_OK
    assert main([*vote, "--members", "nli:tiny-distilbert,nli:tiny-roberta,nli:tiny-electra"]) == EXIT_OK
    with Project.open(proj) as project:
        stored = [s["params"]["models"] for s in vote_sets(project)]
    assert stored == [["nli:tiny-distilbert", "nli:tiny-roberta", "nli:tiny-electra"],  # newest first
                      ["nli:tiny-distilbert", "nli:tiny-roberta"]]
