"""The headless CLI: the same engine functions, progress on stderr, documented exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from engine.cli import main


def test_init_import_info_export(tmp_path, capsys, shared_data):
    proj = tmp_path / "p.cbproj"
    assert main(["init", str(proj)]) == 0
    assert "created" in capsys.readouterr().out
    assert main(["import", str(proj), str(shared_data / "cad/NLI/original/train.tsv"), "--name", "nli"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] == 1666 and out["task"] == "pair"
    assert main(["info", str(proj), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["datasets"][0]["labels"] == {"contradiction": 550, "entailment": 562, "neutral": 554}
    assert main(["export", str(proj), "nli", str(tmp_path / "nli.jsonl")]) == 0
    assert len((tmp_path / "nli.jsonl").read_text(encoding="utf-8").splitlines()) == 1666


def test_explicit_mapping_and_quoting(tmp_path, capsys, shared_data):
    proj = tmp_path / "p.cbproj"
    main(["init", str(proj)])
    capsys.readouterr()
    code = main(["import", str(proj), str(shared_data / "sst2_glue/dev.tsv"), "--quoting", "none",
                 "--text-col", "content", "--label-col", "label", "--split", "dev"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 872


def test_user_error_exit_code_and_message(tmp_path, capsys):
    proj = tmp_path / "p.cbproj"
    main(["init", str(proj)])
    bad = tmp_path / "bad.csv"
    bad.write_text("text,label\nx,\n")
    assert main(["import", str(proj), str(bad)]) == 3
    err = capsys.readouterr().err
    assert "CB210" in err and "data row 1" in err and "What to do:" in err
    assert main(["info", str(tmp_path / "missing.cbproj")]) == 3


def test_module_entry_point_help_and_exit_codes(tmp_path):
    env = {**os.environ, "COUNTERBIAS_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "engine", "--help"], capture_output=True, text=True, env=env)
    assert done.returncode == 0
    for cmd in ("init", "import", "info", "export", "demo"):
        assert cmd in done.stdout
    assert "exit codes" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "engine", "nonsense"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2


def test_demo_project(tmp_path, capsys):
    proj = tmp_path / "demo.cbproj"
    assert main(["demo", str(proj)]) == 0
    assert main(["info", str(proj), "--json"]) == 0
    info = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    (ds,) = info["datasets"]
    assert ds["rows"] == 3904 and ds["splits"] == {"dev": 490, "train": 3414}
    assert main(["demo", str(proj)]) == 0  # idempotent
