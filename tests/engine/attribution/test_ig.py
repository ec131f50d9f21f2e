"""Integrated Gradients: completeness, batching, word sums, every architecture."""

from __future__ import annotations

import numpy as np
import pytest

from engine.attribution import ExampleInput, IGSettings, attribute_texts
from engine.attribution.batch import encode_batch
from engine.attribution.kernel import AttributionStats
from engine.models.backbones import TINY_ARCHS
from engine.text import words_of

SENTENCES = [
    "A wonderful, moving film!",
    "Terrible acting and a boring plot... 2/10 😀👍",
    "I didn't like it, but the café scenes were well-made.",
    "The plot is thin; the actors aren't.",
    "It's not bad at all — actually rather good.",
]


def _examples() -> list[ExampleInput]:
    return [ExampleInput(i, (t,)) for i, t in enumerate(SENTENCES)]


def _f(model, batch, ids, targets):
    import torch

    from engine.attribution.forward import ClassifierForward

    with torch.no_grad():
        probs = ClassifierForward(model)(ids, *batch.forward_args())
    return probs[torch.arange(len(targets)), torch.as_tensor(targets)].cpu().numpy()


def _check_completeness(model, tok, labels, results, max_length: int, tol: float) -> None:
    """Word scores add up to f(x) - f(baseline), computed independently of captum."""
    batch = encode_batch(model, tok, [(t,) for t in SENTENCES], max_length)
    targets = [r.target_index for r in results]
    gap = _f(model, batch, batch.input_ids, targets) - _f(model, batch, batch.baseline_ids, targets)
    sums = np.array([r.fields[0].scores.sum() for r in results])
    deltas = np.array([r.delta for r in results])
    assert np.all(np.abs(deltas) < tol), deltas
    assert np.allclose(sums, gap, atol=tol), (sums, gap)


def test_ig_completeness_on_the_trained_minilm(trained_minilm: dict) -> None:
    from engine.models.loading import load_member

    m = load_member(trained_minilm["project"], "minilm")
    stats = AttributionStats()
    results = attribute_texts(
        m.model, m.tokenizer, m.info.labels, m.info.fields, _examples(), "ig",
        # the CPU's token budget on every device, so that the chunk count below holds on a GPU too
        IGSettings(budget="full", token_budget=4096),
        max_length=64, batch_size=5, max_padding=1.0, stats=stats,
    )
    _check_completeness(m.model, m.tokenizer, m.info.labels, results, 64, tol=0.02)
    # one padded batch, one attribute() call: 1 prediction pass, 2 layer evaluations,
    # ceil(5 * 50 / internal_batch_size) = 2 integration chunks, 2 convergence-delta passes
    assert stats.forward_calls == 7
    by_text = {r.example_id: r for r in results}
    top = by_text[1].fields[0].words[int(np.argmax(by_text[1].fields[0].scores))]
    assert top.lower() in {"terrible", "boring"}


@pytest.mark.parametrize("arch", TINY_ARCHS)
def test_ig_completeness_for_every_architecture(arch: str) -> None:
    from engine.models import get_backbone

    backbone = get_backbone(f"tiny-{arch}")
    tok = backbone.load_tokenizer()
    model = backbone.build_model(2, {0: "neg", 1: "pos"}, seed=3).eval()
    model.requires_grad_(False)
    results = attribute_texts(
        model, tok, ["neg", "pos"], ("text",), _examples(), "ig", IGSettings(n_steps=20), max_length=48, max_padding=1.0
    )
    assert [r.fields[0].words for r in results] == [words_of(t) for t in SENTENCES]
    _check_completeness(model, tok, ["neg", "pos"], results, 48, tol=1e-3)


def test_batched_equals_per_example(trained_minilm: dict) -> None:
    from engine.models.loading import load_member

    m = load_member(trained_minilm["project"], "minilm")
    args = (m.model, m.tokenizer, m.info.labels, m.info.fields, _examples(), "ig", IGSettings(n_steps=16))
    batched = attribute_texts(*args, max_length=64, batch_size=5, max_padding=1.0)  # all five padded together
    single = attribute_texts(*args, max_length=64, batch_size=1)
    for a, b in zip(batched, single):
        assert a.fields[0].words == b.fields[0].words
        assert np.allclose(a.fields[0].scores, b.fields[0].scores, atol=2e-4)


def test_target_can_be_chosen(trained_minilm: dict) -> None:
    from engine.attribution import TargetLabelError
    from engine.models.loading import load_member

    m = load_member(trained_minilm["project"], "minilm")
    args = (m.model, m.tokenizer, m.info.labels, m.info.fields, _examples()[:2], "ig", IGSettings(n_steps=8))
    neg = attribute_texts(*args, target="Negative", max_length=64)
    assert {r.target for r in neg} == {"Negative"}
    with pytest.raises(TargetLabelError):
        attribute_texts(*args, target="Neutral", max_length=64)


def test_examples_with_a_large_delta_are_refined_with_more_steps(trained_minilm: dict) -> None:
    from engine.models.loading import load_member

    m = load_member(trained_minilm["project"], "minilm")
    args = (m.model, m.tokenizer, m.info.labels, m.info.fields, _examples()[:3], "ig")
    refined = attribute_texts(*args, IGSettings(n_steps=25, delta_tolerance=1e-12, max_steps=100), max_length=64)
    direct = attribute_texts(*args, IGSettings(n_steps=100, delta_tolerance=None), max_length=64)
    for a, b in zip(refined, direct):
        assert np.allclose(a.fields[0].scores, b.fields[0].scores, atol=1e-5)
        assert np.isclose(a.delta, b.delta, atol=1e-6)
