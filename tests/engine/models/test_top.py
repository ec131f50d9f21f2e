"""The top-cpu preset: lower layers run once, the top layer and head trained on their cached inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.engine.models.fixtures import _MEMO, cancel_when, import_cad_sentiment

#: MiniLM-L3 (3 layers, the top one tuned) on a few hundred CAD rows at 64 tokens.
TOP = {"max_length": 64, "max_train_rows": 160, "max_dev_rows": 48, "epochs": 2, "batch_size": 16}


@pytest.fixture(scope="module")
def top_member(tmp_path_factory: pytest.TempPathFactory, models_cache: Any) -> dict[str, Any]:
    if "top" not in _MEMO:
        from engine.models import MemberSpec, train_member, train_preset
        from engine.store import Project

        project = Project.create(tmp_path_factory.mktemp("top") / "cad.cbproj")
        dataset = import_cad_sentiment(project)
        spec = MemberSpec("top-l3", "minilm-l3", {}, train_preset("top-cpu", **TOP))
        messages: list[str] = []
        result = train_member(project, dataset.id, spec, progress=lambda f, m: messages.append(m))
        _MEMO["top"] = {"project": project, "dataset": dataset, "spec": spec, "result": result, "messages": messages}
    return _MEMO["top"]


def test_top_member_moves_only_its_top_layer_and_predicts_what_it_learnt(top_member: dict) -> None:
    from engine.models.data import training_data
    from engine.models.loading import load_member
    from engine.models.predict import predict
    from engine.models.registry import get_backbone

    project, spec, result = top_member["project"], top_member["spec"], top_member["result"]
    metrics = result.model.metrics
    assert metrics["preset"] == "top-cpu" and metrics["strategy"] == "cached-top"
    assert metrics["top"]["layers"] == 3 and metrics["top"]["tune_layers"] == 1
    assert metrics["top"]["encoded_rows"] == 160 + 48
    assert metrics["verified_rows"] > 0 and metrics["verified_max_logit_diff"] <= 1e-3
    assert 0.6 < result.dev_accuracy <= 1.0
    # the cached layer inputs are gone once the member is saved
    assert not list((project.files_dir / "features").glob("*-top2-*"))
    assert any("below layer 3" in m for m in top_member["messages"])
    assert any("epoch 2/2, dev accuracy" in m for m in top_member["messages"])

    member = load_member(project, spec.name)
    fresh = get_backbone("minilm-l3").build_model(2, {0: "Negative", 1: "Positive"}, seed=0)
    trained_layers, fresh_layers = member.model.bert.encoder.layer, fresh.bert.encoder.layer
    for a, b in zip(trained_layers[0].parameters(), fresh_layers[0].parameters(), strict=True):
        assert np.array_equal(a.detach().cpu().numpy(), b.detach().numpy())       # frozen below the cut
    top_unchanged = all(np.array_equal(a.detach().cpu().numpy(), b.detach().numpy())
                        for a, b in zip(trained_layers[2].parameters(), fresh_layers[2].parameters(), strict=True))
    # the best dev epoch is kept, epoch 0 (the head probed on the frozen layers) included
    assert result.dev_accuracy >= metrics["top"]["probe_dev_accuracy"]
    assert len(metrics["history"]) == 2 and top_unchanged == (metrics["best_epoch"] == 0)
    assert not np.array_equal(member.model.classifier.weight.detach().cpu().numpy(),
                              fresh.classifier.weight.detach().numpy())
    data = training_data(project, top_member["dataset"].id, spec)
    full = predict(project, spec.name, [r.texts for r in data.dev]).argmax(-1)
    labels = np.array([r.label for r in data.dev])
    # dev accuracy was measured on float16 layer inputs: the saved fp32 model agrees to a row or two
    assert abs((full == labels).mean() - result.dev_accuracy) <= 2 / len(labels)


def test_top_member_explains_with_ig_and_completeness_holds(top_member: dict) -> None:
    from engine.attribution import IGSettings, attribute_texts
    from engine.models.loading import load_member
    from tests.engine.attribution.test_ig import _check_completeness, _examples

    m = load_member(top_member["project"], top_member["spec"].name)
    results = attribute_texts(m.model, m.tokenizer, m.info.labels, m.info.fields, _examples(), "ig", IGSettings(),
                              max_length=64)
    assert all(np.any(r.fields[0].scores != 0) for r in results)
    _check_completeness(m.model, m.tokenizer, m.info.labels, results, 64, tol=0.02)


def test_cancelled_encode_resumes_after_the_rows_it_kept(top_member: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.errors import Cancelled
    from engine.models import MemberSpec, top, train_member, train_preset

    monkeypatch.setattr(top, "ENCODE_ROWS", 16)
    project, dataset = top_member["project"], top_member["dataset"]
    spec = MemberSpec("top-l3-short", "minilm-l3", {}, train_preset("top-cpu", **{**TOP, "max_length": 32, "epochs": 1}))
    token, progress = cancel_when("encoding 32/")

    with pytest.raises(Cancelled):
        train_member(project, dataset.id, spec, progress=progress, cancel=token)
    assert list((project.files_dir / "features").glob("*-top2-*/states.npy"))   # kept for the resume
    result = train_member(project, dataset.id, spec)
    assert result.model.metrics["top"]["reused_rows"] == 32
    assert result.model.metrics["top"]["encoded_rows"] == 160 + 48 - 32


@pytest.mark.parametrize("arch", ["roberta", "electra", "mpnet", "distilbert"])
def test_other_encoders_tuned_path_matches_their_full_forward(arch: str, top_member: dict) -> None:
    """RoBERTa / ELECTRA / DistilBERT masks and MPNet's relative position bias: the verification inside training passes."""
    from engine.models import MemberSpec, train_member, train_preset

    project, dataset = top_member["project"], top_member["dataset"]
    spec = MemberSpec(f"top-tiny-{arch}", f"tiny-{arch}", {},
                      train_preset("top-cpu", **{**TOP, "max_length": 32, "max_train_rows": 48, "max_dev_rows": 16,
                                                 "epochs": 1}))
    metrics = train_member(project, dataset.id, spec).model.metrics
    assert metrics["verified_rows"] == 16 and metrics["verified_max_logit_diff"] <= 1e-3


def test_unsupported_encoder_and_too_many_layers_are_named_errors(top_member: dict) -> None:
    from engine.models import MemberSpec, train_member, train_preset
    from engine.models.errors import EnsembleConfigError

    project, dataset = top_member["project"], top_member["dataset"]
    small = {**TOP, "max_length": 32, "max_train_rows": 16, "max_dev_rows": 8, "epochs": 1}
    with pytest.raises(EnsembleConfigError, match="does not support"):
        train_member(project, dataset.id, MemberSpec("d", "tiny-albert", {}, train_preset("top-cpu", **small)))
    with pytest.raises(EnsembleConfigError, match="out of range"):
        train_member(project, dataset.id,
                     MemberSpec("e", "tiny-roberta", {}, train_preset("top-cpu", **{**small, "tune_layers": 3})))
    with pytest.raises(EnsembleConfigError, match="not positive"):
        train_preset("top-cpu", tune_layers=0)


def test_top_preset_cost_and_identity() -> None:
    from engine.models.config import MemberSpec, TrainConfig, train_preset
    from engine.models.train import member_cost

    full = member_cost(MemberSpec("a", "minilm-l6", train=train_preset("fast-cpu")))
    tuned = member_cost(MemberSpec("b", "minilm-l6", train=train_preset("top-cpu")))
    # the encode below layer 6 (5/6 of a forward pass) + 2 epochs of one layer in six, against 2 full epochs
    assert tuned / full == pytest.approx((0.15 * 5 / 6 + 2 / 6) / 2)
    mpnet = member_cost(MemberSpec("c", "mpnet-base", train=train_preset("top-cpu")))
    # MPNet's encode pass costs a larger share of its epoch (measured on the demo)
    assert mpnet / member_cost(MemberSpec("d", "mpnet-base", train=train_preset("fast-cpu"))) == pytest.approx(
        (0.43 * 11 / 12 + 2 / 12) / 2)
    assert "tune_layers" not in TrainConfig().identity()          # earlier members keep their hash
    assert train_preset("top-cpu").identity()["strategy"] == "cached-top"


def test_no_room_for_the_layer_inputs_is_a_named_error_before_writing(top_member: dict,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.errors import DiskFullError
    from engine.models import MemberSpec, train_member, train_preset
    from engine.store import failures

    monkeypatch.setattr(failures, "free_bytes", lambda path: 4 << 20)   # 4 MiB free: the file needs 0.8 MiB + 16 MiB room
    project, dataset = top_member["project"], top_member["dataset"]
    spec = MemberSpec("top-full-disk", "tiny-roberta", {}, train_preset("top-cpu", **{**TOP, "max_length": 32}))
    with pytest.raises(DiskFullError, match="more were needed"):
        train_member(project, dataset.id, spec)
    assert not list((project.files_dir / "features").glob("tiny-roberta-*/states.npy"))
