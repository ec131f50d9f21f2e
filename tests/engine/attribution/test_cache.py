"""The attributions table is a cache: a rerun computes nothing and loads no model."""

from __future__ import annotations

import numpy as np
import pytest

from engine.attribution import attribute_dataset, load_attributions, settings_key_for
from engine.errors import Cancelled
from engine.models import get_model, train_member
from engine.progress import CancelToken
from engine.store import ExampleQuery
from tests.engine.models.fixtures import import_cad_sentiment, tiny_spec


@pytest.fixture
def tiny_project(project):
    dataset = import_cad_sentiment(project)
    train_member(project, dataset.id, tiny_spec("distilbert", "m"))
    ids = project.example_ids(ExampleQuery(dataset.id, splits=("dev",)))[:12].tolist()
    return project, dataset, ids


def _rows(project) -> int:
    return project.db["attributions"].count


def test_second_run_computes_nothing(tiny_project, monkeypatch: pytest.MonkeyPatch) -> None:
    project, dataset, ids = tiny_project
    first = attribute_dataset(project, "m", dataset.id, method="ig", settings={"n_steps": 8}, example_ids=ids, max_length=48)
    assert (first.computed, first.cached, first.requested) == (12, 0, 12)
    assert first.forward_calls > 0 and first.max_abs_delta is not None and first.max_abs_delta < 1e-3
    rows = _rows(project)
    assert rows == 12

    from engine.models import loading

    def no_model(*args, **kwargs):
        raise AssertionError("a cached rerun must not load the model")

    monkeypatch.setattr(loading, "load_member", no_model)
    second = attribute_dataset(project, "m", dataset.id, method="ig", settings={"n_steps": 8}, example_ids=ids, max_length=48)
    assert (second.computed, second.cached, second.forward_calls) == (0, 12, 0)
    assert _rows(project) == rows
    assert second.settings_key == first.settings_key


def test_other_settings_are_a_new_key_and_results_load_back(tiny_project) -> None:
    project, dataset, ids = tiny_project
    a = attribute_dataset(project, "m", dataset.id, method="ig", settings={"n_steps": 8}, example_ids=ids[:4], max_length=48)
    b = attribute_dataset(project, "m", dataset.id, method="ig", settings={"n_steps": 4}, example_ids=ids[:4], max_length=48)
    assert a.settings_key != b.settings_key and b.computed == 4 and _rows(project) == 8
    info = get_model(project, "m")
    assert a.settings_key == settings_key_for(info, "ig", {"n_steps": 8}, max_length=48)
    stored = load_attributions(project, info.id, "ig", a.settings_key, ids[:4])
    assert set(stored) == {(i, "text") for i in ids[:4]}
    for s in stored.values():
        assert len(s.words) == len(s.scores) > 0 and s.target in ("Negative", "Positive")
        assert np.isfinite(s.scores).all()


def test_cancelled_job_resumes_where_it_stopped(tiny_project) -> None:
    project, dataset, ids = tiny_project
    token = CancelToken()
    calls = []

    def progress(fraction: float, message: str = "") -> None:
        calls.append(fraction)
        if "examples" in message and fraction > 0:
            token.cancel()

    with pytest.raises(Cancelled):
        attribute_dataset(project, "m", dataset.id, method="lime", settings={"num_samples": 16}, example_ids=ids, max_length=48, batch_size=2, progress=progress, cancel=token)
    done = _rows(project)
    assert 0 < done < 12
    rest = attribute_dataset(project, "m", dataset.id, method="lime", settings={"num_samples": 16}, example_ids=ids, max_length=48, batch_size=2)
    assert rest.cached == done and rest.computed == 12 - done and _rows(project) == 12
