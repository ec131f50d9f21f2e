"""Fine-tuning: real MiniLM-L6 learns CAD sentiment; skip, resume, tiny architectures, predict."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.errors import Cancelled
from engine.models import (
    EnsembleConfig,
    EnsembleConfigError,
    ModelConfigMismatchError,
    TrainingDataError,
    default_ensemble,
    get_model,
    hypothesis_only_member,
    list_models,
    predict,
    predict_dataset,
    train_ensemble,
    train_member,
    train_preset,
)
from engine.models.backbones import TINY_ARCHS
from engine.models.train import member_folder
from engine.progress import CancelToken
from tests.engine.models.fixtures import CAD, TINY_TRAIN, import_cad_sentiment, need_cad, tiny_spec


def test_minilm_learns_cad_sentiment(trained_minilm: dict) -> None:
    result = trained_minilm["result"]
    assert not result.skipped
    assert result.dev_accuracy >= 0.7, result.history
    info = get_model(trained_minilm["project"], "minilm")
    assert info.metrics["dev_source"] == "split" and info.metrics["dev_rows"] == 245
    assert info.metrics["train_rows"] == 320 and info.metrics["dev_accuracy"] == result.dev_accuracy
    assert (info.folder / "model.safetensors").is_file()
    assert not list(info.folder.glob("*.bin")) and not (info.folder / "checkpoint").exists()


def test_same_member_is_skipped_without_loading(trained_minilm: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.models import train as train_module

    monkeypatch.setattr(train_module, "_Trainer", None)  # any attempt to train would fail
    again = train_member(trained_minilm["project"], trained_minilm["dataset"].id, trained_minilm["spec"])
    assert again.skipped and again.dev_accuracy == trained_minilm["result"].dev_accuracy


def test_predict_is_a_usable_label_judge(trained_minilm: dict) -> None:
    project = trained_minilm["project"]
    probs = predict(project, "minilm", ["An absolute masterpiece, moving and beautiful.", "Awful. Boring, stupid and far too long."])
    assert probs.shape == (2, 2) and np.allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    labels = get_model(project, "minilm").labels
    assert [labels[i] for i in probs.argmax(axis=1)] == ["Positive", "Negative"]


def test_other_configuration_under_same_name_is_refused(trained_minilm: dict) -> None:
    spec = trained_minilm["spec"]
    changed = type(spec)(spec.name, spec.backbone, {}, train_preset("fast-cpu", max_length=48))
    with pytest.raises(ModelConfigMismatchError):
        train_member(trained_minilm["project"], trained_minilm["dataset"].id, changed)


@pytest.fixture
def cad_project(project):
    import_cad_sentiment(project)
    return project


@pytest.mark.parametrize("arch", TINY_ARCHS)
def test_tiny_members_of_every_architecture_train(cad_project, arch: str) -> None:
    dataset = cad_project.datasets()[0]
    result = train_member(cad_project, dataset.id, tiny_spec(arch))
    assert 0.0 <= result.dev_accuracy <= 1.0
    info = get_model(cad_project, f"tiny-{arch}")
    assert info.backbone == f"tiny-{arch}" and info.labels == ["Negative", "Positive"]
    probs = predict(cad_project, info.name, ["good", "bad"])
    assert probs.shape == (2, 2)


def test_interrupted_member_resumes_from_last_epoch(cad_project) -> None:
    dataset = cad_project.datasets()[0]
    spec = tiny_spec("electra", "resumed", epochs=3)
    token = CancelToken()
    messages: list[str] = []

    def progress(fraction: float, message: str = "") -> None:
        messages.append(message)
        if "epoch 2/3, step 2/" in message:
            token.cancel()

    with pytest.raises(Cancelled):
        train_member(cad_project, dataset.id, spec, progress=progress, cancel=token)
    assert any("ETA" in m for m in messages)
    state = json.loads((member_folder(cad_project, "resumed") / "checkpoint" / "train_state.json").read_text())
    assert state["epochs_done"] == 1
    assert not list_models(cad_project)  # no row until the member is finished

    resumed = train_member(cad_project, dataset.id, spec)
    assert resumed.resumed_from_epoch == 1 and len(resumed.history) == 3
    straight = train_member(cad_project, dataset.id, tiny_spec("electra", "straight", epochs=3))
    assert straight.resumed_from_epoch == 0
    assert [h["dev_accuracy"] for h in resumed.history] == [h["dev_accuracy"] for h in straight.history]
    assert np.isclose(resumed.history[-1]["train_loss"], straight.history[-1]["train_loss"], atol=1e-5)


def test_held_out_dev_when_dataset_has_no_dev_split(project) -> None:
    from engine.io.importer import ImportOptions, import_file

    need_cad()
    dataset = import_file(project, CAD / "sentiment" / "orig" / "dev.tsv", options=ImportOptions(name="only-train")).dataset
    result = train_member(project, dataset.id, tiny_spec("albert", dev_fraction=0.2, max_train_rows=None, max_dev_rows=None))
    info = result.model
    assert info.metrics["dev_source"] == "held-out"
    assert info.metrics["dev_rows"] + info.metrics["train_rows"] == 245
    assert 45 <= info.metrics["dev_rows"] <= 52


def test_ensemble_config_rules() -> None:
    config = default_ensemble("cad-")
    assert config.names == ["cad-minilm-l6", "cad-minilm-l3", "cad-mpnet-base"] and config.threshold == 2
    assert EnsembleConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    with pytest.raises(EnsembleConfigError):
        default_ensemble(backbones=("minilm-l6", "minilm-l3"))
    with pytest.raises(EnsembleConfigError):
        train_preset("turbo")
    paper = train_preset("paper")
    assert (paper.batch_size, paper.learning_rate, paper.max_length, paper.epochs) == (32, 5e-5, 300, 15)
    a = tiny_spec("electra").config_hash(1)
    assert a == tiny_spec("electra", device="cuda", mixed_precision="bf16").config_hash(1)
    assert a != tiny_spec("electra").config_hash(2) and a != tiny_spec("electra", seed=1).config_hash(1)


def test_train_ensemble_records_a_run(cad_project) -> None:
    dataset = cad_project.datasets()[0]
    config = EnsembleConfig(tuple(tiny_spec(a) for a in ("distilbert", "electra", "albert")))
    seen: list[float] = []
    result = train_ensemble(cad_project, dataset.id, config, progress=lambda f, m="": seen.append(f))
    assert result.names == ["tiny-distilbert", "tiny-electra", "tiny-albert"] and result.threshold == 2
    assert seen == sorted(seen) and seen[-1] == 1.0
    run = next(iter(cad_project.db.query("SELECT * FROM runs WHERE id = ?", [result.run_id])))
    assert run["kind"] == "train" and run["status"] == "done"
    again = train_ensemble(cad_project, dataset.id, config)
    assert all(m.skipped for m in again.members)


def test_members_that_explain_are_trained_first_and_reported_in_config_order(cad_project) -> None:
    """A member trained on its head only judges but does not explain: it is trained last, so the
    explainers are stored (and can explain rows) while it trains."""
    dataset = cad_project.datasets()[0]
    judge = tiny_spec("electra", "judge", strategy="cached-head")
    config = EnsembleConfig((judge, tiny_spec("distilbert"), tiny_spec("albert")))
    stored_when: dict[str, list[str]] = {}

    def progress(fraction: float, message: str = "") -> None:
        for name in ("judge", "tiny-distilbert", "tiny-albert"):
            if name in message:
                stored_when.setdefault(name, sorted(m.name for m in list_models(cad_project)))

    result = train_ensemble(cad_project, dataset.id, config, progress=progress)
    assert result.names == ["judge", "tiny-distilbert", "tiny-albert"]
    assert stored_when["tiny-distilbert"] == []
    assert stored_when["judge"] == ["tiny-albert", "tiny-distilbert"]  # both explainers stored before it started
    ids = {m.name: m.id for m in list_models(cad_project)}
    assert ids["tiny-distilbert"] < ids["tiny-albert"] < ids["judge"]


def test_single_label_training_data_is_refused(project, tmp_path) -> None:
    from engine.io.importer import import_file

    path = tmp_path / "one.csv"
    path.write_text("text,label,split\n" + "".join(f"row {i},pos,train\n" for i in range(10)) + "x,neg,test\n")
    dataset = import_file(project, path).dataset
    with pytest.raises(TrainingDataError):
        train_member(project, dataset.id, tiny_spec("electra"))


def test_hypothesis_only_member_predicts_nli_dataset(project) -> None:
    from engine.io.importer import ImportOptions, import_file

    need_cad()
    nli = import_file(project, CAD / "NLI" / "original" / "train.tsv", options=ImportOptions(name="snli")).dataset
    assert nli.task == "pair"
    spec = hypothesis_only_member("hyp", "tiny-electra", **TINY_TRAIN)
    result = train_member(project, nli.id, spec)
    assert result.model.fields == ("hypothesis",)
    preds = predict_dataset(project, "hyp", nli.id)
    assert preds.probs.shape == (nli.row_count, 3) and len(preds.example_ids) == nli.row_count
    assert preds.gold.min() >= 0 and 0.0 <= preds.accuracy <= 1.0
    assert np.all((preds.gold_probability >= 0) & (preds.gold_probability <= 1))
    # the judge takes plain hypothesis strings for this member
    assert predict(project, "hyp", ["A man is sleeping."]).shape == (1, 3)

    pair = train_member(project, nli.id, tiny_spec("distilbert", "pair"))
    assert pair.model.fields == ("premise", "hypothesis")
    assert predict(project, "pair", [("A man sleeps.", "A person rests.")]).shape == (1, 3)


def test_hypothesis_only_member_needs_a_pair_dataset(cad_project) -> None:
    with pytest.raises(EnsembleConfigError):
        train_member(cad_project, cad_project.datasets()[0].id, hypothesis_only_member("h", "tiny-electra"))
