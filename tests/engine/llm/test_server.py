"""``serve-llm``: llama.cpp's OpenAI-compatible HTTP server on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from engine.llm.errors import LLMConfigError
from engine.llm.server import build_parser, start_local_server
from tests.engine.llm.conftest import SMOL, require_smollm2

REPO = Path(__file__).resolve().parents[3]


def get_json(url: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def test_serves_real_openai_compatible_http(smol_server):
    assert smol_server.base_url.startswith("http://127.0.0.1:") and smol_server.base_url.endswith("/v1")
    models = get_json(f"{smol_server.base_url}/models")
    assert SMOL in [m["id"] for m in models["data"]]
    answer = get_json(
        f"{smol_server.base_url}/chat/completions",
        {"model": SMOL, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "temperature": 0},
    )
    assert answer["object"] == "chat.completion" and answer["usage"]["completion_tokens"] <= 4
    assert isinstance(answer["choices"][0]["message"]["content"], str)


def test_listens_on_loopback_only():
    with pytest.raises(LLMConfigError):  # refused before any model is touched
        start_local_server(SMOL, 0, host="0.0.0.0")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--host", "0.0.0.0"])


def test_close_stops_listening():
    require_smollm2()
    server = start_local_server(SMOL, 0, n_threads=1, n_ctx=256)
    url = f"{server.base_url}/models"
    assert get_json(url)["data"]
    server.close()
    assert not server.running
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        get_json(url)


def test_main_serves_until_interrupted(tmp_path):
    require_smollm2()
    env = {**os.environ, "COUNTERBIAS_HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.llm.server", "--model", SMOL, "--port", "0", "--threads", "1", "--ctx", "256"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"serving {SMOL} at http://127.0.0.1:"), line + proc.stderr.read()
        base_url = line.split(" at ", 1)[1].split()[0]
        assert SMOL in [m["id"] for m in get_json(f"{base_url}/models")["data"]]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
