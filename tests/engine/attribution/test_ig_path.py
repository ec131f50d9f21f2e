"""IG with nodes placed where the output changes (engine.attribution.ig_path)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.attribution import ExampleInput, IGSettings, attribute_texts, settings_key
from engine.attribution.kernel import AttributionStats
from engine.attribution.errors import MethodSettingsError
from engine.attribution.ig_path import adaptive_nodes, allocate_nodes
from tests.engine.attribution.test_budget import TEXTS


def test_nodes_follow_the_change_and_weights_integrate() -> None:
    assert allocate_nodes([0.0, 0.6, 0.0, 0.2], 12) == [1, 7, 1, 3]
    assert sum(allocate_nodes([0.3, 0.1, 0.0], 2)) == 3  # at least one node per interval
    # a steep sigmoid, its derivative integrated over [0, 1] on 16 nodes: the adaptive rule
    # (probed at 9 points) gets the rise right where 16 Gauss-Legendre nodes over the path miss it
    f = lambda a: 1 / (1 + np.exp(-(a - 0.31) * 150))  # noqa: E731
    df = lambda a: 150 * f(a) * (1 - f(a))  # noqa: E731
    exact = f(1.0) - f(0.0)
    alphas, weights = adaptive_nodes(f(np.linspace(0, 1, 9)), 16)
    assert len(alphas) == 16 and np.isclose(weights.sum(), 1.0) and np.all((alphas > 0) & (alphas < 1))
    t, w = np.polynomial.legendre.leggauss(16)
    uniform = float((w / 2 * df((t + 1) / 2)).sum())
    adaptive = float((weights * df(alphas)).sum())
    assert abs(adaptive - exact) < 0.05 and abs(uniform - exact) > 0.5


@pytest.fixture(scope="module")
def jumpy():
    """MiniLM-L3 with a seeded head scaled so that P(pos) jumps within a short stretch of the IG path."""
    import torch

    from engine.models import get_backbone

    backbone = get_backbone("minilm-l3")
    model = backbone.build_model(2, {0: "neg", 1: "pos"}, seed=5).eval()
    model.requires_grad_(False)
    with torch.no_grad():
        for p in model.classifier.parameters():
            p.mul_(2000.0)
    return model, backbone.load_tokenizer()


def _run(model, tok, settings):
    stats = AttributionStats()
    out = attribute_texts(model, tok, ["neg", "pos"], ("text",), [ExampleInput(i, (t,)) for i, t in enumerate(TEXTS)],
                          "ig", settings, max_length=64, stats=stats)
    return [r.fields[0].scores for r in out], np.abs(stats.deltas), stats.forward_rows


def test_adaptive_nodes_integrate_a_jump_that_uniform_nodes_miss(jumpy) -> None:
    model, tok = jumpy
    ref, ref_delta, _ = _run(model, tok, IGSettings(budget="fast", nodes="uniform", n_steps=400, delta_tolerance=None))
    assert ref_delta.max() < 1e-3
    uniform, u_delta, _ = _run(model, tok, IGSettings(budget="fast", nodes="uniform", delta_tolerance=None))
    adaptive, a_delta, _ = _run(model, tok, IGSettings(budget="fast", delta_tolerance=None))  # 16 nodes each
    err = lambda scores: max(np.abs(a - b).max() for a, b in zip(scores, ref))  # noqa: E731
    assert a_delta.max() < u_delta.max() / 3
    assert err(adaptive) < err(uniform) / 3
    # refined until complete: the adaptive rule gets there with fewer model rows
    _, a_delta, a_rows = _run(model, tok, IGSettings(budget="fast", delta_tolerance=0.05))
    _, u_delta, u_rows = _run(model, tok, IGSettings(budget="fast", nodes="uniform", delta_tolerance=0.05))
    assert a_delta.max() <= 0.05 and a_rows < u_rows


def test_fast_budget_refines_only_grossly_incomplete_integrals(jumpy) -> None:
    model, tok = jumpy
    assert IGSettings(budget="fast").resolved().delta_tolerance == 0.2
    assert IGSettings(budget="full").resolved().delta_tolerance == 0.05
    once, once_delta, once_rows = _run(model, tok, IGSettings(budget="fast", delta_tolerance=None))
    default, delta, rows = _run(model, tok, IGSettings(budget="fast"))
    # on this path 16 nodes miss by more than 0.2 on one text and by 0.05-0.2 on another: only the first is redone
    loose = (once_delta > 0.05) & (once_delta <= 0.2)
    assert (once_delta > 0.2).any() and loose.any()
    assert delta.max() <= 0.2 and np.allclose(delta[loose], once_delta[loose]) and rows > once_rows
    _, strict_delta, strict_rows = _run(model, tok, IGSettings(budget="fast", delta_tolerance=0.05))
    assert strict_rows > rows and strict_delta.max() <= 0.05
    with pytest.raises(MethodSettingsError):
        IGSettings(delta_tolerance="loose")


def test_node_placement_is_part_of_the_key_only_when_adaptive() -> None:
    key = lambda s: settings_key("ig", s, target="predicted", max_length=128)  # noqa: E731
    # uniform nodes keep the keys they had before node placement existed
    assert key(IGSettings(budget="fast", nodes="uniform", delta_tolerance=0.05)) == "5ab81a869b666fbe"
    # the fast budget's own tolerance (0.2) is a different computation, so a different key
    assert key(IGSettings(budget="fast", nodes="uniform")) != "5ab81a869b666fbe"
    assert key(IGSettings(budget="full")) == key(IGSettings(budget="full", nodes="uniform")) == "4d92f4fc436be8a2"
    assert IGSettings(budget="fast").resolved().nodes == "adaptive" and IGSettings().resolved().nodes == "uniform"
    assert key(IGSettings(budget="fast")) != key(IGSettings(budget="fast", probes=16)) != key(IGSettings(budget="fast", nodes="uniform"))
    with pytest.raises(MethodSettingsError):
        IGSettings(nodes="random")
    with pytest.raises(MethodSettingsError):
        IGSettings(probes=0)
