"""The quick-cpu preset: cached features, head-only training, a full member IG can explain."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from tests.engine.models.fixtures import _MEMO, cancel_when, import_cad_sentiment

#: MiniLM-L3 on a few hundred CAD rows at 64 tokens: the encode takes seconds on 2 cores.
QUICK = {"max_length": 64, "max_train_rows": 160, "max_dev_rows": 48, "epochs": 20, "batch_size": 32}


@pytest.fixture(scope="module")
def quick_member(tmp_path_factory: pytest.TempPathFactory, models_cache: Any) -> dict[str, Any]:
    if "quick" not in _MEMO:
        from engine.models import MemberSpec, train_member, train_preset
        from engine.store import Project

        project = Project.create(tmp_path_factory.mktemp("quick") / "cad.cbproj")
        dataset = import_cad_sentiment(project)
        spec = MemberSpec("quick-l3", "minilm-l3", {}, train_preset("quick-cpu", **QUICK))
        _MEMO["quick"] = {"project": project, "dataset": dataset, "spec": spec,
                          "result": train_member(project, dataset.id, spec)}
    return _MEMO["quick"]


def test_quick_member_round_trip_predicts_what_its_head_learnt(quick_member: dict) -> None:
    import torch

    from engine.models.data import training_data
    from engine.models.features import encode_features, features_folder
    from engine.models.loading import load_member
    from engine.models.quick import head_logits

    project, spec, result = quick_member["project"], quick_member["spec"], quick_member["result"]
    metrics = result.model.metrics
    assert metrics["preset"] == "quick-cpu" and metrics["strategy"] == "cached-head"
    assert 0.6 < result.dev_accuracy <= 1.0  # MiniLM-L3 features separate CAD sentiment well above chance
    assert metrics["features"]["encoded_rows"] == 160 + 48
    assert (result.model.folder / "model.safetensors").is_file()

    member = load_member(project, spec.name)
    data = training_data(project, quick_member["dataset"].id, spec)
    folder = features_folder(project, spec, quick_member["dataset"].id, data.fields)
    cached, stats = encode_features(member.model, member.tokenizer, data.dev, folder, max_length=64,
                                    device=member.device)
    assert stats.encoded == 0  # every dev row is read from the cache
    with torch.no_grad():
        head = head_logits(member.model, torch.from_numpy(cached)).argmax(-1).numpy()
    from engine.models.predict import predict

    full = predict(project, spec.name, [r.texts for r in data.dev]).argmax(-1)
    assert np.array_equal(full, head)
    labels = np.array([r.label for r in data.dev])
    assert (full == labels).mean() == pytest.approx(result.dev_accuracy)


def test_quick_member_explains_with_ig_and_completeness_holds(quick_member: dict) -> None:
    from engine.attribution import IGSettings, attribute_texts
    from engine.models.loading import load_member
    from tests.engine.attribution.test_ig import _check_completeness, _examples

    m = load_member(quick_member["project"], quick_member["spec"].name)
    results = attribute_texts(m.model, m.tokenizer, m.info.labels, m.info.fields, _examples(), "ig", IGSettings(),
                              max_length=64)
    assert all(np.any(r.fields[0].scores != 0) for r in results)  # gradients reach the embeddings
    _check_completeness(m.model, m.tokenizer, m.info.labels, results, 64, tol=0.02)


def test_second_member_on_the_same_backbone_reuses_the_cache(quick_member: dict) -> None:
    from engine.models import MemberSpec, train_member, train_preset

    project, dataset = quick_member["project"], quick_member["dataset"]
    other = MemberSpec("quick-l3-b", "minilm-l3", {}, train_preset("quick-cpu", **{**QUICK, "learning_rate": 1e-3}))
    result = train_member(project, dataset.id, other)
    assert result.model.metrics["features"]["encoded_rows"] == 0
    assert result.model.metrics["features"]["reused_rows"] == 160 + 48
    assert result.model.metrics["features"]["folder"] == quick_member["result"].model.metrics["features"]["folder"]


def test_cancelled_encode_resumes_from_its_shards(quick_member: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.errors import Cancelled
    from engine.models import MemberSpec, train_member, train_preset
    from engine.models import features

    monkeypatch.setattr(features, "SHARD_ROWS", 16)
    project, dataset = quick_member["project"], quick_member["dataset"]
    spec = MemberSpec("quick-l3-short", "minilm-l3", {}, train_preset("quick-cpu", **{**QUICK, "max_length": 32, "eval_batch_size": 16}))
    token, progress = cancel_when("encoding 32/")

    with pytest.raises(Cancelled):
        train_member(project, dataset.id, spec, progress=progress, cancel=token)
    result = train_member(project, dataset.id, spec)
    assert result.model.metrics["features"]["reused_rows"] == 32
    assert result.model.metrics["features"]["encoded_rows"] == 160 + 48 - 32


def test_preset_is_shown_beside_dev_accuracy(quick_member: dict, capsys: pytest.CaptureFixture) -> None:
    from engine.cli import main
    from engine.errors import EXIT_OK
    from engine.models import list_models

    project = quick_member["project"]
    assert list_models(project)[0].preset == "quick-cpu"
    assert main(["-q", "models", str(project.path)]) == EXIT_OK
    listed = {m["name"]: m for m in json.loads(capsys.readouterr().out)}
    assert listed["quick-l3"]["preset"] == "quick-cpu" and listed["quick-l3"]["dev_accuracy"] > 0.6
    rows = list_models(project)[0].metrics["train_rows"]
    assert listed["quick-l3"]["training"] == f"quick-cpu: head only, {rows:,} rows"


def test_quick_preset_costs_an_encode_pass_and_top_cpu_is_the_cpu_default() -> None:
    from engine.models.config import MemberSpec, TrainConfig, train_preset
    from engine.models.device import default_preset
    from engine.models.train import member_cost

    full = member_cost(MemberSpec("a", "mpnet-base", train=train_preset("fast-cpu")))
    quick = member_cost(MemberSpec("b", "mpnet-base", train=train_preset("quick-cpu")))
    # one forward-only pass against 2 fine-tuning epochs (MPNet's forward pass: 0.43 of its epoch, measured)
    assert quick / full == pytest.approx(0.43 / 2)
    # members trained before the strategy field existed keep their identity
    assert "strategy" not in TrainConfig().identity()
    assert train_preset("quick-cpu").identity()["strategy"] == "cached-head"
    import torch

    assert default_preset() == ("fast-cpu" if torch.cuda.is_available() else "sample-cpu")
