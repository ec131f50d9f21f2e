"""Attribution budgets: the fast budget keeps IG complete, sizes samples to the words and batches
without changing the scores; the full budget keeps the old cache keys; a budget nobody chose follows the device."""

from __future__ import annotations

import numpy as np
import pytest

from engine.attribution import ExampleInput, IGSettings, LimeSettings, ShapleySettings, attribute_texts, settings_key
from engine.attribution.kernel import AttributionStats
from engine.attribution.perturb import lime_sample_count, shapley_permutation_count

SHORT = "Great film."
LONG = (
    "The first half drags and the jokes fall flat, but the last act is sharp, funny and moving, "
    "and the two leads carry it with real warmth; I left the cinema smiling."
)
TEXTS = [
    "A wonderful, moving film!",
    "Terrible acting and a boring plot, I hated it.",
    "I didn't like it, but the café scenes were well-made.",
    "The plot is thin; the actors aren't.",
    "It's not bad at all, actually rather good.",
]


@pytest.fixture(scope="module")
def l3():
    """MiniLM-L3 with a seeded new head (no training needed for these properties)."""
    from engine.models import get_backbone

    backbone = get_backbone("minilm-l3")
    model = backbone.build_model(2, {0: "neg", 1: "pos"}, seed=5).eval()
    model.requires_grad_(False)
    return model, backbone.load_tokenizer()


def _run(model, tok, texts, method, settings, **kw):
    stats = AttributionStats()
    out = attribute_texts(model, tok, ["neg", "pos"], ("text",), [ExampleInput(i, (t,)) for i, t in enumerate(texts)],
                          method, settings, max_length=64, stats=stats, **kw)
    return out, stats


def test_full_budget_keeps_the_old_cache_keys_and_fast_gets_its_own() -> None:
    # keys of the default settings before budgets existed
    old = {"ig": "4d92f4fc436be8a2", "lime": "3b5e8a7123c5b5a3", "shapley": "b5dcf27327bb160a"}
    for method, cls in (("ig", IGSettings), ("lime", LimeSettings), ("shapley", ShapleySettings)):
        full = settings_key(method, cls(budget="full"), target="predicted", max_length=128)
        default = settings_key(method, cls(), target="predicted", max_length=128)
        fast = settings_key(method, cls(budget="fast"), target="predicted", max_length=128)
        assert full == default == old[method] and fast != full
    assert IGSettings().resolved().n_steps == 50 and IGSettings(budget="fast").resolved().n_steps == 16


def test_fast_ig_is_complete_and_cheaper(l3) -> None:
    import torch

    from engine.attribution.batch import encode_batch
    from engine.attribution.forward import ClassifierForward

    model, tok = l3
    fast, fast_stats = _run(model, tok, TEXTS, "ig", IGSettings(budget="fast"), batch_size=5, max_padding=1.0)
    full, full_stats = _run(model, tok, TEXTS, "ig", IGSettings(budget="full"), batch_size=5, max_padding=1.0)
    batch = encode_batch(model, tok, [(t,) for t in TEXTS], 64)
    f = ClassifierForward(model)
    with torch.no_grad():
        gap = (f(batch.input_ids, *batch.forward_args()) - f(batch.baseline_ids, *batch.forward_args())).numpy()
    for r in fast:
        assert abs(r.delta) <= 0.05
        assert np.isclose(r.fields[0].scores.sum(), gap[r.example_id, r.target_index], atol=0.05)
    assert fast_stats.forward_rows < full_stats.forward_rows
    for a, b in zip(fast, full):
        assert np.allclose(a.fields[0].scores, b.fields[0].scores, atol=0.02)


def test_sample_sizes_follow_the_word_count(l3) -> None:
    model, tok = l3
    from engine.attribution.batch import encode_batch

    groups = {t: encode_batch(model, tok, [(t,)], 64).n_groups[0] for t in (SHORT, LONG)}
    for text, n in groups.items():
        _, lime = _run(model, tok, [text], "lime", LimeSettings(budget="fast"))
        # one prediction pass row, the unperturbed input, the samples
        assert lime.forward_rows == 1 + 1 + lime_sample_count(n, 1.0, 64, 200)
        _, shap = _run(model, tok, [text], "shapley", ShapleySettings(budget="fast"))
        perms = shapley_permutation_count(n, 256, 10)
        assert shap.forward_rows == 1 + 2 + perms * (n - 1)
    assert lime_sample_count(groups[SHORT], 1.0, 64, 200) <= lime_sample_count(groups[LONG], 1.0, 64, 200)
    assert shapley_permutation_count(groups[SHORT], 256, 10) >= shapley_permutation_count(groups[LONG], 256, 10)
    assert [shapley_permutation_count(n, 256, 10) for n in (5, 100, 1000)] == [10, 4, 2]
    assert [lime_sample_count(n, 1.0, 64, 200) for n in (5, 100, 1000)] == [64, 100, 200]


@pytest.mark.parametrize("method", ["lime", "shapley"])
def test_fast_batching_gives_the_same_scores(l3, method: str) -> None:
    model, tok = l3
    settings = LimeSettings(budget="fast") if method == "lime" else ShapleySettings(budget="fast")
    batched, _ = _run(model, tok, TEXTS, method, settings, batch_size=5, max_padding=1.0)
    single, _ = _run(model, tok, TEXTS, method, settings, batch_size=1)
    for a, b in zip(batched, single):
        assert a.fields[0].words == b.fields[0].words
        assert np.allclose(a.fields[0].scores, b.fields[0].scores, atol=1e-5)


def test_fast_shapley_is_efficient(l3) -> None:
    """Antithetic permutation values add up exactly to f(x) - f(all words removed)."""
    import torch

    from engine.attribution.batch import encode_batch
    from engine.attribution.forward import ClassifierForward

    model, tok = l3
    out, _ = _run(model, tok, TEXTS, "shapley", ShapleySettings(budget="fast"))
    batch = encode_batch(model, tok, [(t,) for t in TEXTS], 64)
    f = ClassifierForward(model)
    with torch.no_grad():
        gap = (f(batch.input_ids, *batch.forward_args()) - f(batch.baseline_ids, *batch.forward_args())).numpy()
    for r in out:
        assert np.isclose(r.fields[0].scores.sum(), gap[r.example_id, r.target_index], atol=1e-5)


def test_a_budget_nobody_chose_follows_the_device(monkeypatch) -> None:
    import engine.models.device as device
    from engine.attribution import resolve_settings
    from engine.attribution.method import default_budget

    monkeypatch.setattr(device, "has_gpu", lambda **_: False)
    assert default_budget() == "fast"
    assert resolve_settings("ig").budget == "fast" and resolve_settings("ig").resolved().nodes == "adaptive"
    assert resolve_settings("lime", {"num_samples": 50}).budget == "fast"
    assert resolve_settings("shapley", {"budget": "full"}).budget == "full"  # chosen: kept
    assert resolve_settings("ig", IGSettings()).budget == "full"  # an object is taken as it is
    monkeypatch.setattr(device, "has_gpu", lambda **_: True)
    assert default_budget() == "full" and resolve_settings("ig", {"n_steps": 20}).budget == "full"
