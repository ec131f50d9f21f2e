"""Fixtures: the counterbias tests' voted project and the loopback stub server."""

from tests.engine.counterbias.conftest import voted_project, voted_project_template  # noqa: F401
from tests.engine.llm.conftest import smol_server, stub  # noqa: F401
