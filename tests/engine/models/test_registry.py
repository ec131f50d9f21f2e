"""Backbone registry: real offline weights, converted MiniLM-L3, MPNet from split zip, tiny nets."""

from __future__ import annotations

import numpy as np
import pytest

from engine.models import (
    BackboneUnavailableError,
    UnknownBackboneError,
    UnsafeWeightsError,
    available_backbones,
    get_backbone,
    register_backbone,
)
from engine.models.backbones import TINY_ARCHS
from engine.models.backbone import Backbone


def test_builtin_names_are_registered() -> None:
    names = set(available_backbones())
    assert {"minilm-l6", "minilm-l3", "mpnet-base", "local-dir"} <= names
    assert {f"tiny-{a}" for a in TINY_ARCHS} <= names


def test_unknown_backbone_names_the_choices() -> None:
    with pytest.raises(UnknownBackboneError) as err:
        get_backbone("bert-huge")
    assert "minilm-l6" in err.value.hint


def test_register_backbone_decorator_stores_names_not_objects() -> None:
    @register_backbone("test-alias-l6")
    class Alias(Backbone):
        def prepare(self):
            return get_backbone("minilm-l6").prepare()

    b = get_backbone("test-alias-l6", note="x")
    assert b.name == "test-alias-l6" and b.params == {"note": "x"}


def test_minilm_l3_conversion_matches_onnxruntime() -> None:
    ort = pytest.importorskip("onnxruntime")
    import torch
    from transformers import BertModel

    from engine.models.backbones import MiniLML3, _dist_file

    backbone = get_backbone("minilm-l3")
    folder = backbone.prepare()
    assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    assert backbone.prepare() == folder  # built once
    tok = backbone.load_tokenizer()
    assert len(tok) == 30522
    enc = tok(["a great movie", "not good at all, really bad"], padding=True, return_tensors="np")
    session = ort.InferenceSession(str(_dist_file(MiniLML3.DIST, MiniLML3.ONNX, "")))
    names = [o.name for o in session.get_outputs()]
    feeds = {"input_ids": enc["input_ids"].astype(np.int64), "attention_mask": enc["attention_mask"].astype(np.int64)}
    reference = session.run(None, feeds)[names.index("onnx::Shape_422")]
    model = BertModel.from_pretrained(str(folder), add_pooling_layer=False, use_safetensors=True).eval()
    with torch.no_grad():
        ours = model(input_ids=torch.tensor(enc["input_ids"]), attention_mask=torch.tensor(enc["attention_mask"])).last_hidden_state
    assert np.abs(ours.numpy() - reference).max() < 1e-4


def test_mpnet_unpacks_once_and_classifies() -> None:
    import torch

    backbone = get_backbone("mpnet-base")
    tok = backbone.load_tokenizer()
    assert len(tok) == 30527 and tok.is_fast
    model = backbone.build_model(2, {0: "neg", 1: "pos"}).eval()
    assert model.config.model_type == "mpnet" and model.config.num_hidden_layers == 12
    with torch.no_grad():
        logits = model(**tok(["fine film"], return_tensors="pt")).logits
    assert logits.shape == (1, 2)


@pytest.mark.parametrize("arch", TINY_ARCHS)
def test_tiny_backbones_reuse_the_minilm_tokenizer(arch: str) -> None:
    import torch

    from engine.models.encoding import model_inputs

    backbone = get_backbone(f"tiny-{arch}")
    tok = backbone.load_tokenizer()
    assert len(tok) == 30522
    assert tok.convert_ids_to_tokens(tok("the movie", add_special_tokens=False)["input_ids"]) == ["the", "movie"]
    model = backbone.build_model(3, {0: "a", 1: "b", 2: "c"}).eval()
    assert model.config.vocab_size == len(tok)
    assert sum(p.numel() for p in model.parameters()) < 3_000_000
    batch = tok(["a great movie", "bad"], padding=True, return_tensors="pt")
    with torch.no_grad():
        assert model(**model_inputs(model, batch)).logits.shape == (2, 3)


def test_local_dir_refuses_pickled_weights(tmp_path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(UnsafeWeightsError):
        get_backbone("local-dir", path=str(tmp_path)).prepare()
    with pytest.raises(BackboneUnavailableError):
        get_backbone("local-dir", path=str(tmp_path / "missing")).prepare()


def test_local_dir_loads_a_saved_model(tmp_path) -> None:
    src = get_backbone("tiny-electra")
    model = src.build_model(2, {0: "neg", 1: "pos"})
    model.save_pretrained(str(tmp_path))
    src.load_tokenizer().save_pretrained(str(tmp_path))
    local = get_backbone("local-dir", path=str(tmp_path))
    again = local.build_model(2, {0: "neg", 1: "pos"})
    assert again.config.model_type == "electra"
    assert len(local.load_tokenizer()) == 30522


def test_no_pickle_loading_in_model_code() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "engine"
    for folder in ("models", "attribution", "text"):
        for py in (root / folder).glob("*.py"):
            source = py.read_text(encoding="utf-8")
            assert "torch.load(" not in source and "import pickle" not in source, py
