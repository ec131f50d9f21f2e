"""The headless CLI: the same engine functions, progress on stderr, documented exit codes."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

import pytest

from engine.cli import build_parser, main


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


EVERY_VERB = ("init", "import", "info", "export", "demo", "stats", "zfilter", "train", "attribute", "vote", "models",
              "serve-llm", "triples", "generate", "verify", "candidates", "decide", "augment", "demos", "evaluate", "diversity",
              "report",
              "corpus", "index", "retrieve", "core", "train-retriever", "al-data", "al-simulate", "annotate",
              "patterns", "vt-generate")


def test_help_lists_every_verb_and_every_verb_has_help(tmp_path, capsys):
    from engine.cli.commands import COMMANDS

    assert COMMANDS.names() == list(EVERY_VERB)
    env = {**os.environ, "COUNTERBIAS_HOME": str(tmp_path), "COLUMNS": "120"}
    done = subprocess.run([sys.executable, "-m", "engine", "--help"], capture_output=True, text=True, env=env)
    assert done.returncode == 0
    listed = re.findall(r"^ {4}(\S+)", done.stdout, re.M)
    assert listed == list(EVERY_VERB)
    for verb in EVERY_VERB:
        with pytest.raises(SystemExit) as info:
            main([verb, "--help"])
        assert info.value.code == 0
        assert capsys.readouterr().out.startswith(f"usage: counterbias {verb} ")


def test_shared_arguments_parse_alike_in_every_verb():
    from engine.cli import build_parser

    parser = build_parser()
    for verb in ("attribute", "vote", "triples", "generate"):
        args = parser.parse_args([verb, "p.cbproj", "reviews", "--split", "train", "--split", "dev", "--limit", "7"])
        assert (str(args.project), args.dataset, args.split, args.limit) == ("p.cbproj", "reviews", ["train", "dev"], 7)
    for verb in ("triples", "generate"):
        args = parser.parse_args([verb, "p.cbproj", "reviews", "--backend", "openai", "--max-tokens", "9"])
        assert (args.backend, args.max_tokens, args.concurrency) == ("openai", 9, 8)


def test_local_slots_and_threads_become_backend_options():
    from engine.cli import build_parser
    from engine.cli.args import llm_config_from_args

    parser = build_parser()
    config = llm_config_from_args(parser.parse_args(["generate", "p.cbproj", "reviews", "--slots", "4", "--threads", "6"]))
    assert config.backend == "local" and config.options == {"n_parallel": 4, "n_threads": 6}
    assert llm_config_from_args(parser.parse_args(["triples", "p.cbproj", "reviews"])).options == {}


def test_demo_project(tmp_path, capsys):
    proj = tmp_path / "demo.cbproj"
    assert main(["demo", str(proj)]) == 0
    assert main(["info", str(proj), "--json"]) == 0
    info = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    (ds,) = info["datasets"]
    assert ds["rows"] == 3904 and ds["splits"] == {"dev": 490, "train": 3414}
    assert main(["demo", str(proj)]) == 0  # idempotent


def test_no_verb_changes_the_defaults_of_the_shared_llm_options():
    # set_defaults on one verb changes the actions its parent shares with every verb: `core` did, and every verb's
    # --temperature and --max-tokens defaults were not the ones written in engine/cli/args.py
    from engine.cli.args import LLM

    shared = {a.dest for a in LLM._actions if a.option_strings}
    parser = build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name, sub in verbs.items():
        assert not shared & set(sub._defaults), (name, shared & set(sub._defaults))
    declared = {a.dest: a.default for a in LLM._actions if a.option_strings}
    assert declared["temperature"] == 0.7 and declared["max_tokens"] == 384
