"""Issue 15: property-based fuzzing of the readers over bytes (the quick version of
``benchmarks/fuzz_readers.py``): random and mutated CSV/TSV/JSONL/gzip files go through the
wizard's preview and a real import; anything but a named error fails, and a refused import
leaves the project unchanged."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("fuzz_readers", REPO / "benchmarks" / "fuzz_readers.py")
fuzz_readers = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("fuzz_readers", fuzz_readers)  # its dataclasses look themselves up there
_spec.loader.exec_module(fuzz_readers)  # type: ignore[union-attr]


def test_readers_raise_only_named_errors_on_fuzzed_bytes(tmp_path_factory):
    from engine.store import Project

    folder = tmp_path_factory.mktemp("fuzz")
    project = Project.create(folder / "fuzz.cbproj")
    seen: dict[str, int] = {}

    @settings(max_examples=300, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large])
    @given(fuzz_readers.cases())
    def one(case: tuple[str, bytes]) -> None:
        suffix, data = case
        n = sum(seen.values())
        outcome, detail = fuzz_readers.run_case(project, folder, n, suffix, data)
        seen[outcome.split(":")[0]] = seen.get(outcome.split(":")[0], 0) + 1
        assert not outcome.startswith("failure"), f"{outcome}\n{detail}"

    try:
        one()
    finally:
        project.close()
    assert seen.get("named", 0) > 0 and seen.get("imported", 0) > 0, seen
