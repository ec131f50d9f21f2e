"""The ``cached-head`` strategy: frozen encoder, cached features, trained classification head.

Full fine-tuning of the default ensemble takes about an hour on a 2-core CPU. Here each
backbone encodes the dataset once (forward passes only, cached in the project by
:mod:`engine.models.features`), and only the classification head is trained on the cached
first-token vectors, which takes seconds.

The member is still a complete ``AutoModelForSequenceClassification`` saved like a fine-tuned
one (pre-trained encoder weights unchanged + the trained head), so loading, prediction and
attribution (IG follows gradients through the whole encoder) treat it as any member. The head
is trained on exactly what the model's forward pass feeds it:

* BERT family (MiniLM): ``classifier(dropout(pooler(h)))`` with ``pooler = tanh(dense(h[:, 0]))``;
  the pre-trained pooler and the new classifier are trained.
* MPNet / RoBERTa / ELECTRA: ``classifier(h)`` (dense + activation + out_proj on ``h[:, 0]``).
* DistilBERT, DeBERTa-v2, ALBERT: their pre-classifier or pooler on ``h[:, 0]``, then the classifier.

After training, the full model is run on a few dev rows and its logits are compared with the
head's logits on the cached vectors; a difference raises :class:`CachedHeadError`.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from engine.models.checkpoint import TrainState
from engine.models.config import MemberSpec
from engine.models.data import TrainingData
from engine.models.errors import CachedHeadError, EnsembleConfigError
from engine.progress import CancelToken, ProgressFn, scaled
from engine.store import Project

__all__ = ["ENCODE_SHARE", "SUPPORTED_TYPES", "CachedHeadError", "CachedHeadTrainer", "fit_head", "head_logits"]

#: Cost of the encode pass relative to one fine-tuning epoch over the same rows (an
#: inference-mode forward pass against forward + backward + optimizer step: MODELS.md measures
#: 0.13 for MiniLM-L6, 0.14 for MiniLM-L3 and 0.22 for MPNet per 32 × 128 batch; length-sorted
#: batches pad less). The head's own training is negligible next to it. The default of
#: :attr:`engine.models.backbone.Backbone.encode_share`; a backbone may measure its own.
ENCODE_SHARE = 0.15
#: ``config.model_type`` values whose head reads only the first token's last hidden state.
SUPPORTED_TYPES = ("bert", "mpnet", "roberta", "electra", "distilbert", "deberta-v2", "albert")
#: Dev rows run through the full model to check it predicts what the head predicted.
VERIFY_ROWS = 16
VERIFY_TOLERANCE = 1e-3


def _check_type(model: Any, backbone: str) -> str:
    model_type = str(getattr(model.config, "model_type", ""))
    if model_type not in SUPPORTED_TYPES:
        raise EnsembleConfigError(
            f"The quick preset (cached features) does not support {backbone!r} (model type {model_type!r}).",
            f"Use the 'fast-cpu' preset for this backbone; quick training supports {', '.join(SUPPORTED_TYPES)}.",
        )
    return model_type


def _head_modules(model: Any) -> list[Any]:
    kind = model.config.model_type
    if kind == "bert":
        return [model.bert.pooler, model.classifier]
    if kind == "albert":
        return [model.albert.pooler, model.classifier]
    if kind == "deberta-v2":
        return [model.pooler, model.classifier]
    if kind == "distilbert":
        return [model.pre_classifier, model.classifier]
    return [model.classifier]


def head_parameters(model: Any) -> list[Any]:
    """The parameters the head trains (everything applied after the encoder's last layer)."""
    return [p for m in _head_modules(model) if m is not None for p in m.parameters()]


def head_logits(model: Any, first_token: Any) -> Any:
    """Logits from first-token vectors ``[n, hidden]``, exactly as the model's forward computes them."""
    import torch

    kind = model.config.model_type
    h = first_token.unsqueeze(1)
    if kind == "bert":
        pooled = model.bert.pooler(h) if model.bert.pooler is not None else first_token
        return model.classifier(model.dropout(pooled))
    if kind == "albert":
        pooled = model.albert.pooler_activation(model.albert.pooler(first_token))
        return model.classifier(model.dropout(pooled))
    if kind == "deberta-v2":
        return model.classifier(model.dropout(model.pooler(h)))
    if kind == "distilbert":
        pooled = torch.nn.functional.relu(model.pre_classifier(first_token))
        return model.classifier(model.dropout(pooled))
    return model.classifier(h)  # mpnet, roberta, electra: a head reading features[:, 0]


def fit_head(
    model: Any,
    x_train: Any,
    y_train: Any,
    x_dev: Any,
    y_dev: Any,
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    weight_decay: float = 0.01,
    warmup_ratio: float = 0.05,
    max_grad_norm: float = 1.0,
    seed: int = 13,
    patience: int | None = None,
    cancel: CancelToken | None = None,
    on_epoch: Any = None,
) -> float:
    """Train ``model``'s head (:func:`head_parameters`) on first-token vectors; keep the best dev epoch.

    AdamW with linear warm-up then decay, gradients clipped; ``on_epoch`` gets one record per
    epoch (``epoch``, ``step``, ``train_loss``, ``dev_accuracy``, ``seconds``, ``best``). The head's
    parameters are left frozen (``requires_grad`` false) with the best epoch's values.

    Returns
    -------
    float
        The best dev accuracy (NaN without dev rows).
    """
    import torch

    params = head_parameters(model)
    for p in params:
        p.requires_grad_(True)
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(params, lr=learning_rate, weight_decay=weight_decay)
    steps_per_epoch = max(1, math.ceil(len(x_train) / batch_size))
    total = steps_per_epoch * epochs
    warmup = int(total * warmup_ratio)
    best: list[Any] | None = None
    best_accuracy = float("-inf")
    stale = 0
    step = 0
    for epoch in range(epochs):
        if cancel is not None:
            cancel.raise_if_cancelled()
        started = time.perf_counter()
        torch.manual_seed(seed + 1000 * (epoch + 1))
        order = torch.from_numpy(np.random.default_rng(seed + epoch).permutation(len(x_train)))
        model.train()
        losses = []
        for s in range(0, len(order), batch_size):
            idx = order[s : s + batch_size]
            lr_scale = (step + 1) / max(1, warmup) if step < warmup else max(0.0, (total - step) / max(1, total - warmup))
            for group in optimizer.param_groups:
                group["lr"] = learning_rate * lr_scale
            loss = torch.nn.functional.cross_entropy(head_logits(model, x_train[idx]), y_train[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
            optimizer.step()
            step += 1
            losses.append(float(loss.detach()))
        accuracy = _head_accuracy(model, x_dev, y_dev)
        improved = best is None or accuracy > best_accuracy
        if improved:
            best_accuracy = accuracy
            best = [p.detach().clone() for p in params]
            stale = 0
        else:
            stale += 1
        if on_epoch is not None:
            on_epoch({"epoch": epoch + 1, "step": step,
                      "train_loss": float(np.mean(losses)) if losses else float("nan"),
                      "dev_accuracy": accuracy, "seconds": round(time.perf_counter() - started, 3), "best": improved})
        if patience is not None and stale >= patience:
            break
    keep_best(model, params, best)
    return best_accuracy if best is not None else float("nan")


def keep_best(model: Any, params: list[Any], best: list[Any] | None) -> None:
    """Copy the best epoch's values into ``params`` (none: leave them), freeze them, eval mode."""
    import torch

    with torch.no_grad():
        for p, kept in zip(params, best or [], strict=False):
            p.copy_(kept)
    for p in params:
        p.requires_grad_(False)
    model.eval()


def check_verified(name: str, diff: float, what: str) -> None:
    """Raise :class:`CachedHeadError` when the saved model's logits differ from ``what`` by more than the tolerance."""
    if not diff <= VERIFY_TOLERANCE:
        raise CachedHeadError(
            f"{name}: the saved model's logits differ from its {what}'s by {diff:.2g}.",
            "Train this backbone with the 'fast-cpu' preset and report the problem.",
        )


def _head_accuracy(model: Any, x: Any, y: Any) -> float:
    import torch

    if len(x) == 0:
        return float("nan")
    model.eval()
    with torch.no_grad():
        return float((head_logits(model, x).argmax(-1) == y).float().mean())


class CachedHeadTrainer:
    """One member trained with the ``cached-head`` strategy (same interface as the fine-tuning loop)."""

    def __init__(
        self,
        project: Project,
        dataset_id: int,
        spec: MemberSpec,
        data: TrainingData,
        folder: Path,
        config_hash: str,
        progress: ProgressFn,
        cancel: CancelToken,
    ) -> None:
        from engine.models.device import Precision, resolve_device
        from engine.models.registry import get_backbone

        self.project = project
        self.dataset_id = dataset_id
        self.spec = spec
        self.cfg = spec.train
        self.data = data
        self.folder = folder
        self.config_hash = config_hash
        self.progress = progress
        self.cancel = cancel
        self.backbone = get_backbone(spec.backbone, **spec.backbone_params)
        self.device = resolve_device(self.cfg.device)
        self.precision = Precision()  # fp32: the cached vectors must equal what the saved member computes
        self.state = TrainState(config_hash)
        self.resumed_from = 0
        self.extra: dict[str, Any] = {}

    def release(self) -> None:
        """Drop the model and tokenizer (the state and metrics stay)."""
        for attr in ("model", "tokenizer"):
            if hasattr(self, attr):
                setattr(self, attr, None)

    # ------------------------------------------------------------------ run
    def run(self) -> None:
        import torch

        from engine.models.features import encode_features, features_folder

        name = self.spec.name
        self.progress(0.0, f"{name}: loading {self.spec.backbone}")
        self.tokenizer = self.backbone.load_tokenizer()
        id2label = dict(enumerate(self.data.labels))
        self.model = self.backbone.build_model(len(self.data.labels), id2label, seed=self.cfg.seed)
        _check_type(self.model, self.spec.backbone)
        self.model.to(self.device)
        self.model.requires_grad_(False)

        rows = list(self.data.train) + list(self.data.dev)
        cache = features_folder(self.project, self.spec, self.dataset_id, self.data.fields)
        meta = {
            "backbone": self.spec.backbone,
            "backbone_params": dict(self.spec.backbone_params),
            "max_length": self.cfg.max_length,
            "dataset_id": self.dataset_id,
            "fields": list(self.data.fields),
            "what": "last hidden state of the first token, fp32, per example id",
        }
        encode_progress = scaled(self.progress, 0.02, 0.9)
        matrix, stats = encode_features(
            self.model,
            self.tokenizer,
            rows,
            cache,
            max_length=self.cfg.max_length,
            device=self.device,
            batch_size=self.cfg.eval_batch_size,
            meta=meta,
            progress=lambda f, m: encode_progress(f, f"{name}: {m}"),
            cancel=self.cancel,
        )
        n_train = len(self.data.train)
        x_train = torch.from_numpy(matrix[:n_train])
        x_dev = torch.from_numpy(matrix[n_train:])
        y_train = torch.tensor([r.label for r in self.data.train])
        y_dev = torch.tensor([r.label for r in self.data.dev])

        head_started = time.perf_counter()
        self._train_head(x_train, y_train, x_dev, y_dev)
        head_seconds = time.perf_counter() - head_started
        self.cancel.raise_if_cancelled()
        diff, checked = self._verify(x_dev if len(x_dev) else x_train, list(self.data.dev) or list(self.data.train))
        self.extra = {
            "features": {
                "folder": cache.relative_to(self.project.files_dir).as_posix(),
                "encoded_rows": stats.encoded,
                "reused_rows": stats.reused,
                "encode_seconds": round(stats.seconds, 2),
            },
            "head_seconds": round(head_seconds, 2),
            "verified_rows": checked,
            "verified_max_logit_diff": diff,
        }
        self._finish()

    def _train_head(self, x_train: Any, y_train: Any, x_dev: Any, y_dev: Any) -> None:
        cfg = self.cfg
        name = self.spec.name
        self.model.cpu()  # the head is small: no device round trips for it

        def on_epoch(record: dict[str, Any]) -> None:
            self.state.history.append({k: record[k] for k in ("epoch", "train_loss", "dev_accuracy", "seconds")})
            self.state.epochs_done, self.state.step = record["epoch"], record["step"]
            if record["best"]:
                self.state.best_accuracy, self.state.best_epoch = record["dev_accuracy"], record["epoch"]
            self.progress(0.9 + 0.08 * record["epoch"] / cfg.epochs, f"{name}: head epoch {record['epoch']}/"
                          f"{cfg.epochs}, dev accuracy {record['dev_accuracy']:.3f}")

        fit_head(self.model, x_train, y_train, x_dev, y_dev, epochs=cfg.epochs, batch_size=cfg.batch_size,
                 learning_rate=cfg.learning_rate, weight_decay=cfg.weight_decay, warmup_ratio=cfg.warmup_ratio,
                 max_grad_norm=cfg.max_grad_norm, seed=cfg.seed, patience=cfg.patience, cancel=self.cancel,
                 on_epoch=on_epoch)
        self.model.eval()

    def _accuracy(self, x: Any, y: Any) -> float:
        return _head_accuracy(self.model, x, y)

    def _verify(self, x: Any, rows: list[Any]) -> tuple[float, int]:
        """Max |logit difference| between the full model and the head on up to VERIFY_ROWS rows."""
        import torch

        from engine.models.encoding import encode_texts, model_inputs

        rows = rows[:VERIFY_ROWS]
        if not rows:
            return 0.0, 0
        self.model.eval()
        with torch.no_grad():
            batch = encode_texts(self.tokenizer, [r.texts for r in rows], self.cfg.max_length)
            full = self.model(**model_inputs(self.model, batch)).logits
            head = head_logits(self.model, x[: len(rows)])
        diff = float((full - head).abs().max())
        check_verified(self.spec.name, diff, "trained head")
        return diff, len(rows)

    def _finish(self) -> None:
        from engine.models.hf import quiet_transformers

        from engine.models.checkpoint import publish_files
        from engine.store.paths import safe_remove

        safe_remove(self.project, self.folder)  # a link is removed itself, never followed
        self.folder.mkdir(parents=True)
        with quiet_transformers():
            self.model.save_pretrained(str(self.folder))
            self.tokenizer.save_pretrained(str(self.folder))
        for stale in self.folder.glob("*.bin"):
            safe_remove(self.project, stale)
        (self.folder / "train_state.json").write_text(
            json.dumps({"config_hash": self.config_hash, "history": self.state.history}, indent=1), encoding="utf-8"
        )
        publish_files(self.folder)
