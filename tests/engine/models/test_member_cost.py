"""Each member's share of an ensemble's progress is its estimated training cost."""

from __future__ import annotations

import json

import pytest

from engine.models.config import MemberSpec, TrainConfig
from engine.models.train import member_cost


def _spec(backbone: str, **params) -> MemberSpec:
    return MemberSpec(name=f"m-{backbone}", backbone=backbone, backbone_params=params, train=TrainConfig())


def test_costs_follow_the_measured_ratios_of_the_built_ins():
    l6, l3, mpnet = (member_cost(_spec(b)) for b in ("minilm-l6", "minilm-l3", "mpnet-base"))
    assert l3 / l6 == pytest.approx(0.4) and mpnet / l6 == pytest.approx(4.0)
    # tokens per input and epochs scale the cost
    longer = MemberSpec(name="x", backbone="minilm-l6", train=TrainConfig(max_length=256, epochs=4))
    assert member_cost(longer) == pytest.approx(4 * l6)


def test_local_folder_cost_is_estimated_from_its_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"num_hidden_layers": 12, "hidden_size": 768}))
    l6 = member_cost(_spec("minilm-l6"))
    assert member_cost(_spec("local-dir", path=str(tmp_path))) / l6 == pytest.approx(12 * 768**1.5 / (6 * 384**1.5))
    # unreadable config: counted like MiniLM-L6
    assert member_cost(_spec("local-dir", path=str(tmp_path / "missing"))) == pytest.approx(l6)


def test_the_default_cpu_ensemble_splits_progress_as_it_was_measured_on_the_demo():
    """sample-cpu on the demo's 3,414 rows (2 cores, stop 41): MiniLM-L6 136 s, -L3 69 s, MPNet 682 s (its encode
    pass about 480 s of it). At one encode share for every backbone MPNet got 62 % of the job's progress, and the
    job's ETA said 13 min while MPNet alone had 26 left."""
    from engine.models.config import default_ensemble
    from engine.models.data import split_sizes
    from engine.models.quick import ENCODE_SHARE
    from engine.models.registry import get_backbone

    assert get_backbone("minilm-l6").forward_share() == ENCODE_SHARE
    config = default_ensemble("demo:", preset="sample-cpu")
    costs = [member_cost(m, split_sizes({"train": 3414}, m.train)) for m in config.members]
    shares = [c / sum(costs) for c in costs]
    measured = [136 / 887, 69 / 887, 682 / 887]
    assert shares == pytest.approx(measured, abs=0.03)
