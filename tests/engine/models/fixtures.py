"""Session-wide fixtures shared by the model and attribution tests (imported by their conftests).

pytest instantiates a session fixture once per conftest that imports it, so the expensive
objects (a trained MiniLM-L6 member) are memoised in a module global and built only once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

SHARED_DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
CAD = SHARED_DATA / "cad"

_MEMO: dict[str, Any] = {}

#: The MiniLM-L6 test member: a few hundred CAD rows, 64 tokens, 2 epochs (~30 s on 2 cores).
MINILM_TRAIN = {"max_length": 64, "epochs": 2, "learning_rate": 2e-4, "max_train_rows": 320, "batch_size": 16}
TINY_TRAIN = {"max_length": 32, "epochs": 1, "learning_rate": 1e-3, "max_train_rows": 48, "batch_size": 16, "max_dev_rows": 16}


def need_cad() -> None:
    if not CAD.is_dir():
        pytest.skip("../shared/data/cad is not beside this checkout")


@pytest.fixture(scope="session", autouse=True)
def models_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One models cache for the whole session (the per-test COUNTERBIAS_HOME would rebuild it)."""
    if "cache" not in _MEMO:
        folder = Path(os.environ.get("COUNTERBIAS_TEST_MODELS_CACHE") or tmp_path_factory.mktemp("models-cache"))
        os.environ["COUNTERBIAS_MODELS_CACHE"] = str(folder)
        _MEMO["cache"] = folder
    return _MEMO["cache"]


def import_cad_sentiment(project: Any) -> Any:
    """CAD sentiment originals: train split + dev split, one dataset."""
    from engine.io.importer import ImportOptions, import_file

    need_cad()
    result = import_file(project, CAD / "sentiment" / "orig" / "train.tsv", options=ImportOptions(name="cad"))
    import_file(
        project, CAD / "sentiment" / "orig" / "dev.tsv", options=ImportOptions(append_to=result.dataset.id, split="dev")
    )
    return project.dataset(result.dataset.id)


@pytest.fixture(scope="session")
def trained_minilm(tmp_path_factory: pytest.TempPathFactory, models_cache: Path) -> dict[str, Any]:
    """A project with CAD sentiment and a fine-tuned MiniLM-L6 member called ``minilm``."""
    if "minilm" not in _MEMO:
        from engine.models import MemberSpec, train_member, train_preset
        from engine.store import Project

        project = Project.create(tmp_path_factory.mktemp("minilm") / "cad.cbproj")
        dataset = import_cad_sentiment(project)
        spec = MemberSpec("minilm", "minilm-l6", {}, train_preset("fast-cpu", **MINILM_TRAIN))
        result = train_member(project, dataset.id, spec)
        _MEMO["minilm"] = {"project": project, "dataset": dataset, "spec": spec, "result": result}
    return _MEMO["minilm"]


def tiny_spec(arch: str, name: str | None = None, **overrides: Any) -> Any:
    from engine.models import MemberSpec, train_preset

    return MemberSpec(name or f"tiny-{arch}", f"tiny-{arch}", {}, train_preset("fast-cpu", **{**TINY_TRAIN, **overrides}))


def cancel_when(text: str) -> tuple[Any, Any]:
    """``(token, progress)``: the progress callback cancels the token at the first message containing ``text``."""
    from engine.progress import CancelToken

    token = CancelToken()

    def progress(fraction: float, message: str) -> None:
        if text in message:
            token.cancel()

    return token, progress
