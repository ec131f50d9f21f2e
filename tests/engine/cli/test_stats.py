"""CLI: stats (CSV of n, p_hat, z per label) and zfilter (a new dataset version)."""

from __future__ import annotations

import csv
import json

from engine.cli import main


def test_stats_csv_and_zfilter(tmp_path, capsys, shared_data):
    proj = tmp_path / "p.cbproj"
    main(["init", str(proj)])
    main(["import", str(proj), str(shared_data / "cad/sentiment/combined/train.tsv"), "--name", "cad"])
    capsys.readouterr()
    out = tmp_path / "features.csv"
    assert main(["-q", "stats", str(proj), "cad", "--out", str(out), "--features", "unigrams", "--min-count", "10"]) == 0
    summary = json.loads(capsys.readouterr().out)
    top_negative = [f["feature"] for f in summary["top"]["Negative"]]
    assert {"bad", "worst", "terrible", "boring"} <= set(top_negative)
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["feature", "kind", "label", "n", "count", "p_hat", "z", "significant"]
    great = next(r for r in rows if r["feature"] == "great" and r["label"] == "Positive")
    assert int(great["n"]) == 1189 and float(great["z"]) > 15

    assert main(["-q", "zfilter", str(proj), "cad", "--name", "cad-z", "--batch-size", "300"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["dataset"] == "cad-z"
    assert result["accepted"] + result["rejected"] == 3414 and result["rejected"] > 0
    assert main(["-q", "zfilter", str(proj), "cad", "--preset", "z-aug", "--seed", "cad-z", "--name", "aug"]) == 0
    preset = json.loads(capsys.readouterr().out)
    assert preset["rows"] >= result["accepted"]


def test_unknown_feature_family_is_a_named_error(tmp_path, capsys):
    proj = tmp_path / "p.cbproj"
    main(["init", str(proj)])
    src = tmp_path / "d.csv"
    src.write_text("text,label\na b,x\nc d,y\n")
    main(["import", str(proj), str(src)])
    capsys.readouterr()
    assert main(["stats", str(proj), "1", "--features", "unigrams,vibes"]) == 3
    assert "vibes" in capsys.readouterr().err
