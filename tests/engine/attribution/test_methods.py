"""LIME and Shapley over canonical words, with special tokens outside the feature masks."""

from __future__ import annotations

import numpy as np
import pytest

from engine.attribution import (
    ExampleInput,
    LimeSettings,
    MethodSettingsError,
    ShapleySettings,
    UnknownMethodError,
    attribute_texts,
    available_methods,
    resolve_settings,
    settings_key,
)
from engine.text import words_of

TEXTS = ["Terrible acting and a boring plot.", "A wonderful, moving film!", "Not bad; really quite good 😀"]


@pytest.fixture(scope="module")
def tiny():
    from engine.models import get_backbone

    backbone = get_backbone("tiny-roberta")
    model = backbone.build_model(2, {0: "neg", 1: "pos"}, seed=1).eval()
    model.requires_grad_(False)
    return model, backbone.load_tokenizer()


@pytest.mark.parametrize(
    ("method", "settings"),
    [
        ("lime", LimeSettings(num_samples=64)),
        ("shapley", ShapleySettings(num_samples=4)),
        ("shapley", ShapleySettings(estimator="kernel", num_samples=64)),
    ],
)
def test_perturbation_methods_score_every_word(tiny, method: str, settings) -> None:
    model, tok = tiny
    examples = [ExampleInput(i, (t,)) for i, t in enumerate(TEXTS)]
    results = attribute_texts(model, tok, ["neg", "pos"], ("text",), examples, method, settings, max_length=32)
    for r, text in zip(results, TEXTS):
        assert r.fields[0].words == words_of(text)
        assert np.isfinite(r.fields[0].scores).all() and np.abs(r.fields[0].scores).sum() > 0
    again = attribute_texts(model, tok, ["neg", "pos"], ("text",), examples, method, settings, max_length=32)
    assert all(np.allclose(a.fields[0].scores, b.fields[0].scores) for a, b in zip(results, again))


def test_shapley_sampling_is_efficient_for_a_word_set(tiny) -> None:
    """Permutation Shapley values add up exactly to f(x) - f(all words removed)."""
    from engine.attribution.batch import encode_batch
    from engine.attribution.forward import ClassifierForward

    model, tok = tiny
    examples = [ExampleInput(i, (t,)) for i, t in enumerate(TEXTS)]
    results = attribute_texts(
        model, tok, ["neg", "pos"], ("text",), examples, "shapley", ShapleySettings(num_samples=3),
        max_length=32, batch_size=3, max_padding=1.0,
    )
    batch = encode_batch(model, tok, [(t,) for t in TEXTS], 32)
    import torch

    f = ClassifierForward(model)
    with torch.no_grad():
        full = f(batch.input_ids, *batch.forward_args())
        empty = f(batch.baseline_ids, *batch.forward_args())
    for i, r in enumerate(results):
        t = r.target_index
        assert np.isclose(r.fields[0].scores.sum(), float(full[i, t] - empty[i, t]), atol=1e-5)


def test_special_tokens_are_outside_the_feature_mask(tiny) -> None:
    from engine.attribution.batch import encode_batch

    model, tok = tiny
    batch = encode_batch(model, tok, [(TEXTS[0],)], 32)
    ids = batch.input_ids[0]
    special = [i for i, t in enumerate(ids.tolist()) if t in tok.all_special_ids]
    assert all(batch.token_group[0, i] == -1 for i in special)
    assert all(batch.baseline_ids[0, i] == ids[i] for i in special)
    content = batch.token_group[0] >= 0
    assert (batch.baseline_ids[0][content] == tok.pad_token_id).all()


def test_roberta_style_models_get_explicit_positions(tiny) -> None:
    from engine.attribution.batch import encode_batch

    model, tok = tiny
    batch = encode_batch(model, tok, [(t,) for t in TEXTS], 32)
    assert batch.position_ids is not None
    pad = model.config.pad_token_id
    first = batch.position_ids[0, : batch.lengths[0]].tolist()
    assert first == list(range(pad + 1, pad + 1 + batch.lengths[0]))


def test_settings_validation_and_keys() -> None:
    assert set(available_methods()) == {"ig", "lime", "shapley"}
    with pytest.raises(UnknownMethodError):
        resolve_settings("gradcam")
    with pytest.raises(MethodSettingsError):
        resolve_settings("ig", {"steps": 10})
    with pytest.raises(MethodSettingsError):
        resolve_settings("shapley", {"estimator": "exact"})
    a = resolve_settings("ig", {"n_steps": 50, "internal_batch_size": 8})
    b = resolve_settings("ig", {"n_steps": 50, "internal_batch_size": 400})
    key = settings_key("ig", a, target="predicted", max_length=64)
    assert key == settings_key("ig", b, target="predicted", max_length=64)  # performance-only option
    assert key != settings_key("ig", resolve_settings("ig", {"n_steps": 20}), target="predicted", max_length=64)
    assert key != settings_key("ig", a, target="label", max_length=64)
    assert key != settings_key("ig", a, target="predicted", max_length=128)


def test_batch_planner_limits_padding() -> None:
    from engine.attribution.kernel import plan_batches

    lengths = [10, 12, 10, 30, 11, 10]
    assert plan_batches(lengths, 8, 0.0) == [[0, 2, 5], [4], [1], [3]]
    assert plan_batches(lengths, 8, 1.0) == [[0, 2, 5, 4, 1, 3]]
    assert plan_batches(lengths, 2, 1.0) == [[0, 2], [5, 4], [1, 3]]
    assert sorted(i for b in plan_batches(lengths, 3, 0.1) for i in b) == list(range(6))
