"""Fixtures: a real loopback OpenAI-compatible server (scripted answers) for the LLM counterfactual source."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.engine.llm.stub_server import StubServer


@pytest.fixture
def stub() -> Iterator:
    """Start a :class:`StubServer` with a ``reply(body) -> text``; closed after the test."""
    servers: list[StubServer] = []

    def start(**kwargs) -> StubServer:
        server = StubServer(**kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
