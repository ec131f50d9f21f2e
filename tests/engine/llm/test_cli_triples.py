"""CLI `triples` through the real openai client against the loopback SmolLM2 server."""

from __future__ import annotations

import json

from engine.cli import main


def test_triples_command_against_loopback_server(smol_server, tmp_path, capsys, shared_data):
    proj = tmp_path / "p.cbproj"
    main(["init", str(proj)])
    main(["import", str(proj), str(shared_data / "cad/sentiment/combined/dev.tsv"), "--name", "dev"])
    capsys.readouterr()
    args = ["-q", "triples", str(proj), "dev", "--limit", "2", "--backend", "openai",
            "--base-url", smol_server.base_url, "--model", smol_server.model, "--max-tokens", "96"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["processed"] == 2 and first["requests_sent"] >= 2
    assert sum(first["status"].values()) == 2
    # A rerun skips finished examples and resends nothing that was answered.
    assert main(args) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["requests_sent"] <= first["requests_sent"]
    assert second["processed"] + second["skipped"] == 2
