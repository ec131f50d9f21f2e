"""The sample-cpu preset: each member trains on a sample of rows, small backbones fully, large ones their top layer;
an ensemble's progress is split by what each member really costs on the rows it uses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.engine.models.fixtures import TINY_TRAIN, import_cad_sentiment


def test_sample_preset_is_resolved_by_the_backbones_size():
    from engine.models import EnsembleConfigError, default_ensemble, train_preset

    for small in ("minilm-l6", "minilm-l3"):
        cfg = train_preset("sample-cpu", small)
        assert (cfg.preset, cfg.strategy, cfg.max_train_rows, cfg.epochs) == ("sample-cpu", "fine-tune", 800, 2)
    large = train_preset("sample-cpu", "mpnet-base")
    assert (large.strategy, large.tune_layers, large.max_train_rows) == ("cached-top", 1, 3000)
    # what the user sets wins over the sample size
    assert train_preset("sample-cpu", "mpnet-base", max_train_rows=50).max_train_rows == 50
    config = default_ensemble("d:", preset="sample-cpu")
    assert [(m.backbone, m.train.strategy) for m in config.members] == [
        ("minilm-l6", "fine-tune"), ("minilm-l3", "fine-tune"), ("mpnet-base", "cached-top")]
    with pytest.raises(EnsembleConfigError, match="depends on the member's backbone") as err:
        train_preset("sample-cpu")
    assert "Pass the backbone" in err.value.hint
    with pytest.raises(EnsembleConfigError) as err:
        train_preset("nope", "minilm-l6")
    assert "sample-cpu" in err.value.hint and "top-cpu" in err.value.hint
    # the other presets ignore the backbone
    assert train_preset("top-cpu", "minilm-l6") == train_preset("top-cpu")


def test_a_local_model_folder_is_sized_from_its_config(tmp_path):
    from engine.models.config import backbone_size

    (tmp_path / "config.json").write_text(json.dumps({"num_hidden_layers": 12, "hidden_size": 768}))
    assert backbone_size("local-dir", {"path": str(tmp_path)}) == "large"
    (tmp_path / "config.json").write_text(json.dumps({"num_hidden_layers": 4, "hidden_size": 256}))
    assert backbone_size("local-dir", {"path": str(tmp_path)}) == "small"


def test_a_large_folder_the_top_layer_strategy_cannot_train_is_fine_tuned_on_the_sample(tmp_path):
    from engine.models import train_preset
    from engine.models.registry import get_backbone

    params = {"path": str(tmp_path)}
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "deberta-v2", "num_hidden_layers": 12,
                                                      "hidden_size": 768}))
    assert get_backbone("local-dir", **params).architecture() == "deberta-v2"
    cfg = train_preset("sample-cpu", "local-dir", params)
    assert (cfg.strategy, cfg.max_train_rows) == ("fine-tune", 800)  # not the top-layer preset's refusal
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "roberta", "num_hidden_layers": 12,
                                                      "hidden_size": 768}))
    assert train_preset("sample-cpu", "local-dir", params).strategy == "cached-top"
    (tmp_path / "config.json").write_text(json.dumps({"num_hidden_layers": 12, "hidden_size": 768}))
    assert train_preset("sample-cpu", "local-dir", params).strategy == "cached-top"  # unknown type: tried
    assert get_backbone("mpnet-base").architecture() == "mpnet"
    assert get_backbone("tiny-deberta-v2").architecture() == "deberta-v2"


def test_split_sizes_follow_training_data():
    from engine.models.config import TrainConfig
    from engine.models.data import split_sizes

    assert split_sizes({"train": 3414, "dev": 490}, TrainConfig(max_train_rows=800)) == (800, 490)
    assert split_sizes({"Train": 100, "validation": 20, "test": 50}, TrainConfig()) == (100, 20)
    # no dev split: a fraction of the train rows is held out, then the sample is drawn
    assert split_sizes({"train": 1000}, TrainConfig(dev_fraction=0.2, max_train_rows=300, max_dev_rows=50)) == (300, 50)
    # no split at all: every row is a train row
    assert split_sizes({None: 500}, TrainConfig(dev_fraction=0.1)) == (450, 50)


def test_member_cost_counts_the_rows_each_member_uses():
    from engine.models import MemberSpec, train_preset
    from engine.models.quick import ENCODE_SHARE
    from engine.models.train import member_cost

    full = MemberSpec("a", "minilm-l6", train=train_preset("fast-cpu"))
    sample = MemberSpec("b", "minilm-l6", train=train_preset("sample-cpu", "minilm-l6"))
    # per row the same (both fine-tune 2 epochs); over the demo's rows the sample costs what its rows cost
    assert member_cost(full) == pytest.approx(member_cost(sample))
    on_all, on_sample = member_cost(full, (3414, 490)), member_cost(sample, (800, 490))
    assert on_all / on_sample == pytest.approx((3414 * 2 + 490 * 2 * ENCODE_SHARE) / (800 * 2 + 490 * 2 * ENCODE_SHARE))
    # a cached-top member encodes its dev rows once
    top = MemberSpec("c", "mpnet-base", train=train_preset("sample-cpu", "mpnet-base"))
    assert member_cost(top, (1000, 490)) - member_cost(top, (1000, 0)) == pytest.approx(4.0 * 128 * 0.43 * 490)


def _progress_recorder() -> tuple[list[tuple[float, str]], Any]:
    seen: list[tuple[float, str]] = []
    return seen, lambda fraction, message: seen.append((fraction, message))


def test_sample_preset_trains_each_member_on_its_sample_and_splits_progress_by_rows(
        tmp_path: Any, models_cache: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.models import EnsembleConfig, MemberSpec, list_models, train_ensemble, train_preset
    from engine.models.data import split_sizes
    from engine.models.train import member_cost
    from engine.store import Project

    small = {k: v for k, v in TINY_TRAIN.items() if k != "max_train_rows"}
    with Project.create(tmp_path / "cad.cbproj") as project:
        dataset = import_cad_sentiment(project)
        members = [MemberSpec(name, arch, train=train_preset("sample-cpu", arch, **small, max_train_rows=24))
                   for name, arch in (("s1", "tiny-roberta"), ("s2", "tiny-electra"))]
        # a tiny backbone counts as large once the bar for small is below its cost
        monkeypatch.setattr("engine.models.config.SMALL_BACKBONE_COST", 0.5)
        members.append(MemberSpec("big", "tiny-roberta", train=train_preset("sample-cpu", "tiny-roberta", **small,
                                                                         max_train_rows=96)))
        assert [m.train.strategy for m in members] == ["fine-tune", "fine-tune", "cached-top"]
        seen, progress = _progress_recorder()
        train_ensemble(project, dataset.id, EnsembleConfig(tuple(members)), progress=progress)
        info = {m.name: m for m in list_models(project)}
        assert info["s1"].metrics["train_rows"] == 24 and info["big"].metrics["train_rows"] == 96
        assert info["s1"].training_summary == "sample-cpu: fine-tuned, 24 rows"
        assert info["big"].training_summary == "sample-cpu: top layer, 96 rows"
        counts = project.split_counts(dataset.id)
        costs = [member_cost(m, split_sizes(counts, m.train)) for m in members]
        start_of_big = (costs[0] + costs[1]) / sum(costs)
        big_fractions = [f for f, message in seen if message.startswith("big")]
        before = [f for f, message in seen if message.startswith(("s1", "s2"))]
        assert big_fractions and before
        assert min(big_fractions) == pytest.approx(start_of_big, abs=1e-6)
        assert max(before) <= start_of_big + 1e-9
