"""CLI generate -> candidates -> decide -> augment -> export, against the loopback stub server."""

from __future__ import annotations

import csv
import json

from engine.cli import main
from engine.errors import EXIT_OK, EXIT_USER_ERROR
from tests.engine.counterbias.scripted_llm import scripted_reply


def test_generate_decide_augment_export(voted_project, stub, capsys, tmp_path):
    server = stub(reply=scripted_reply)
    path = str(voted_project.path)
    voted_project.close()
    llm = ["--backend", "openai", "--base-url", server.base_url, "--model", "stub"]
    assert main(["-q", "generate", path, "reviews", "--limit", "6", *llm]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert out["created"] == 6 and out["failed"] == 0 and out["rates"]["n"] == 6
    assert main(["-q", "candidates", path, "reviews", "--status", "proposed"]) == EXIT_OK
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 6 and all("fields" not in r["meta"] for r in rows)
    assert main(["-q", "decide", path, "accept", str(rows[0]["id"]), str(rows[1]["id"])]) == EXIT_OK
    assert main(["-q", "decide", path, "reject", str(rows[2]["id"])]) == EXIT_OK
    capsys.readouterr()
    assert main(["-q", "augment", path, "reviews", "--name", "reviews-aug"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == {"dataset": "reviews-aug", "original": 10, "added": 2}
    target = tmp_path / "aug.csv"
    assert main(["-q", "export", path, "reviews-aug", str(target)]) == EXIT_OK
    with open(target, newline="", encoding="utf-8-sig") as f:
        exported = list(csv.DictReader(f))
    assert [r["source"] for r in exported].count("augmented") == 2
    for row in exported:  # the export carries every check's verdict with its reason
        if row["source"] == "augmented":
            provenance = json.loads(row["provenance"])
            assert set(provenance["verdicts"]) >= {"label-flip", "refusal", "copy", "llm-judge"}
            assert all(set(v) == {"status", "reason"} for v in provenance["verdicts"].values())
    # a second augment with the same name is a named error
    assert main(["-q", "augment", path, "reviews", "--name", "reviews-aug"]) == EXIT_USER_ERROR

    # the paper's reconstruction is a setting (a new settings key: six more candidates)
    capsys.readouterr()
    assert main(["-q", "generate", path, "reviews", "--limit", "6", "--mode", "reconstruct", "--drop-prob", "0",
                 *llm]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert out["created"] + out["failed"] == 6
    assert main(["-q", "candidates", path, "reviews", "--status", "proposed"]) == EXIT_OK
    modes = [json.loads(line)["meta"].get("mode") for line in capsys.readouterr().out.splitlines()]
    assert modes.count("edit") == 3 and modes.count("reconstruct") == out["created"]


def test_generate_without_a_vote_says_what_to_do(project, tmp_path, capsys, stub):
    src = tmp_path / "d.csv"
    src.write_text("text,label\ngood film,pos\nbad film,neg\n")
    path = str(project.path)
    project.close()
    main(["-q", "import", path, str(src), "--name", "d"])
    server = stub(reply=scripted_reply)
    code = main(["-q", "generate", path, "d", "--backend", "openai", "--base-url", server.base_url, "--model", "stub"])
    assert code == EXIT_USER_ERROR
    assert "counterbias vote" in capsys.readouterr().err
