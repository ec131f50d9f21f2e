"""The ``cached-top`` strategy: lower layers frozen and run once, the top layer(s) and head trained.

The quick ``cached-head`` strategy (:mod:`engine.models.quick`) trains a head on frozen
features and costs one forward pass, but a frozen MiniLM-L6 read through its ``[CLS]`` vector
reaches only about 72 % on the CAD demo where full fine-tuning reaches 85 %: no head closes that
gap, the encoder has to move. Here only the top ``tune_layers`` transformer layers move:

1. every train and dev row runs once through the frozen embeddings and lower layers (a forward
   pass that stops at the first tuned layer: ``cut / layers`` of a full one), and the hidden
   states entering the first tuned layer are kept — the row's tokens only, float16, in a
   memory-mapped file under ``<project>_files/features/`` that a cancelled run resumes from and
   a finished run deletes;
2. the tuned layers and the head are trained on those states for ``epochs`` epochs (AdamW,
   linear warm-up and decay, batches of similar length, the best dev epoch kept): each epoch
   costs about ``tune_layers / layers`` of a fine-tuning epoch.

The member is a complete ``AutoModelForSequenceClassification`` (lower layers as pre-trained,
tuned layers and head trained) saved like a fine-tuned one, so prediction and attribution treat
it as any member. Before saving, the full model's logits on a few dev rows are compared with the
logits the tuned path computes from freshly captured fp32 inputs; a difference raises
:class:`~engine.models.errors.CachedHeadError` (the path rebuilds the attention mask with
``transformers.masking_utils.create_bidirectional_mask``, as the supported encoders do).

Supported encoders: BERT (MiniLM), RoBERTa, ELECTRA, DistilBERT and MPNet (whose layers also take
the relative position bias, recomputed from the sequence length). DeBERTa-v2 (relative embeddings
passed between layers) and ALBERT (one layer shared by all) are refused with a named error.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from engine.models.config import TOP_TYPES
from engine.models.errors import EnsembleConfigError
from engine.models.features import _fmt_eta as _fmt
from engine.models.features import features_folder, row_crc
from engine.store.paths import safe_remove
from engine.models.quick import (
    VERIFY_ROWS,
    CachedHeadTrainer,
    check_verified,
    head_logits,
    head_parameters,
    keep_best,
)
from engine.progress import scaled

__all__ = ["TOP_TYPES", "CachedTopTrainer", "layer_count", "top_cost"]

#: A tuned-layer epoch against a fine-tuning epoch, per tuned layer out of ``layers`` (forward +
#: backward + optimizer step of one layer; measured ≈ 47 s per epoch for MiniLM-L6's top layer
#: on the demo against ≈ 330 s for a fine-tuning epoch on 2 cores).
TOP_EPOCH_SHARE = 1.0
#: The head is first fitted alone on the frozen top layers' output (linear probing, then fine-tuning:
#: Kumar et al. 2022) with the quick preset's head settings, so tuning starts from a head that already
#: reads the layer, and "epoch 0" (this head, layers untouched: the quick preset's result) competes
#: for the best dev epoch — on a few hundred rows the tuned epochs do not always beat it.
PROBE = {"epochs": 60, "batch_size": 256, "learning_rate": 3e-3, "warmup_ratio": 0.05}
#: Rows per step when encoding (forward only).
ENCODE_ROWS = 64


class _Stop(Exception):
    """Raised by the capture hook: the layers above the cut are not run while encoding."""


def layer_count(model: Any) -> int:
    """Transformer layers of ``model``'s encoder."""
    return len(_layers(model))


def top_cost(layers: int, tune_layers: int, epochs: int, encode_share: float) -> float:
    """Cost of a ``cached-top`` member in fine-tuning epochs: the partial encode plus the tuned epochs."""
    k = max(1, min(int(tune_layers), max(1, layers)))
    return encode_share * (layers - k) / max(1, layers) + epochs * TOP_EPOCH_SHARE * k / max(1, layers)


def _forward_share(spec: Any) -> float:
    """The member's backbone's forward pass as a share of a fine-tuning epoch (the default when unknown)."""
    from engine.errors import CounterbiasError
    from engine.models.quick import ENCODE_SHARE
    from engine.models.registry import get_backbone

    try:
        return get_backbone(spec.backbone, **dict(spec.backbone_params)).forward_share()
    except CounterbiasError:
        return ENCODE_SHARE


def _base(model: Any) -> Any:
    return getattr(model, model.base_model_prefix)


def _layers(model: Any) -> Any:
    base = _base(model)
    return base.transformer.layer if model.config.model_type == "distilbert" else base.encoder.layer


def _check(model: Any, backbone: str, tune_layers: int) -> None:
    kind = str(getattr(model.config, "model_type", ""))
    if kind not in TOP_TYPES:
        raise EnsembleConfigError(
            f"The top-layer preset does not support {backbone!r} (model type {kind!r}).",
            f"Use 'quick-cpu' or 'fast-cpu' for this backbone; top-layer training supports {', '.join(TOP_TYPES)}.",
        )
    if not 1 <= tune_layers <= layer_count(model):
        raise EnsembleConfigError(
            f"tune_layers {tune_layers} is out of range for {backbone!r} ({layer_count(model)} layers).",
            f"Use 1 to {layer_count(model)}.",
        )


def run_top(model: Any, hidden: Any, mask: Any, cut: int) -> Any:
    """Logits from the hidden states entering layer ``cut`` (``[b, t, h]``) and the 0/1 token mask ``[b, t]``."""
    return head_logits(model, run_layers(model, hidden, mask, cut)[:, 0])


def run_layers(model: Any, hidden: Any, mask: Any, cut: int) -> Any:
    """The last hidden state from the states entering layer ``cut`` and the 0/1 token mask."""
    from transformers.masking_utils import create_bidirectional_mask

    extended = create_bidirectional_mask(config=model.config, inputs_embeds=hidden, attention_mask=mask)
    extra: dict[str, Any] = {}
    if model.config.model_type == "mpnet":
        extra["position_bias"] = _base(model).encoder.compute_position_bias(hidden)
    h = hidden
    for layer in _layers(model)[cut:]:
        out = layer(h, extended, **extra)
        h = out[0] if isinstance(out, tuple) else out
    return h


def capture_inputs(model: Any, inputs: dict[str, Any], cut: int) -> Any:
    """The hidden states entering layer ``cut`` for a tokenizer batch, computed by the model's own forward."""
    captured: list[Any] = []

    def hook(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        captured.append(args[0] if args else kwargs["hidden_states"])
        raise _Stop

    handle = _layers(model)[cut].register_forward_pre_hook(hook, with_kwargs=True)
    try:
        _base(model)(**inputs)
    except _Stop:
        pass
    finally:
        handle.remove()
    return captured[0]


class CachedTopTrainer(CachedHeadTrainer):
    """One member trained with the ``cached-top`` strategy (same interface as the fine-tuning loop)."""

    def run(self) -> None:
        import torch

        from engine.models.encoding import encode_texts

        name = self.spec.name
        cfg = self.cfg
        self.progress(0.0, f"{name}: loading {self.spec.backbone}")
        self.tokenizer = self.backbone.load_tokenizer()
        self.model = self.backbone.build_model(len(self.data.labels), dict(enumerate(self.data.labels)),
                                               seed=cfg.seed)
        _check(self.model, self.spec.backbone, cfg.tune_layers)
        self.model.to(self.device)
        self.model.requires_grad_(False)
        layers = layer_count(self.model)
        self.cut = layers - cfg.tune_layers

        rows = list(self.data.train) + list(self.data.dev)
        texts = [r.texts for r in rows]
        lengths = np.array([len(ids) for ids in encode_texts(self.tokenizer, texts, cfg.max_length, padding=False,
                                                             return_tensors=None)["input_ids"]], dtype=np.int64)
        encode_share = _forward_share(self.spec)
        encode_cost = encode_share * self.cut / layers
        total_cost = max(top_cost(layers, cfg.tune_layers, cfg.epochs, encode_share), 1e-9)
        split = 0.02 + 0.96 * encode_cost / total_cost
        folder = self._cache_folder(rows)
        started = time.perf_counter()
        states, offsets, encoded = self._encode(rows, lengths, folder, scaled(self.progress, 0.02, split))
        encode_seconds = time.perf_counter() - started

        n_train = len(self.data.train)
        y = torch.tensor([r.label for r in rows])
        train_started = time.perf_counter()
        probe_accuracy = self._probe_head(states, offsets, lengths, y, n_train)
        self.progress(split, f"{self.spec.name}: head fitted on the frozen layers, dev accuracy {probe_accuracy:.3f}")
        self._train_top(states, offsets, lengths, y, n_train, probe_accuracy, scaled(self.progress, split, 0.98))
        train_seconds = time.perf_counter() - train_started
        self.cancel.raise_if_cancelled()
        diff, checked = self._verify_top(list(self.data.dev) or list(self.data.train))
        del states
        safe_remove(self.project, folder)  # finished: the member holds what was learnt
        self.extra = {
            "top": {"tune_layers": cfg.tune_layers, "layers": layers, "encoded_rows": encoded,
                    "reused_rows": len(rows) - encoded, "encode_seconds": round(encode_seconds, 2),
                    "tokens": int(lengths.sum()), "probe_dev_accuracy": probe_accuracy},
            "train_seconds": round(train_seconds, 2),
            "verified_rows": checked,
            "verified_max_logit_diff": diff,
        }
        self._finish()

    # ------------------------------------------------------------------ the cached layer inputs
    def _cache_folder(self, rows: list[Any]) -> Path:
        digest = hashlib.sha256()
        for r in rows:
            digest.update(f"{r.id}:{row_crc(r.texts)};".encode())
        digest.update(f"cut={self.cut}".encode())
        base = features_folder(self.project, self.spec, self.dataset_id, self.data.fields)
        return base.with_name(f"{base.name}-top{self.cut}-{digest.hexdigest()[:12]}")

    def _encode(self, rows: list[Any], lengths: np.ndarray, folder: Path, progress: Any) -> tuple[Any, Any, int]:
        """float16 states of every row's tokens, flat ``[tokens, hidden]``, and each row's offset; resumable.

        Raises
        ------
        engine.errors.DiskFullError
            Before anything is written when the disk lacks room for the file, or when it fills up
            meanwhile (the rows written so far are kept for a resume).
        """
        from engine.store.failures import disk_full_error, free_bytes, named_storage_error

        needed = int(lengths.sum()) * int(self.model.config.hidden_size) * 2 + (16 << 20)  # + room for the project
        action = "keeping the layer inputs for top-layer training"
        free = free_bytes(folder)
        if not (folder / "states.npy").is_file() and free is not None and free < needed:
            raise disk_full_error(folder, action, needed=needed, kind="project")
        try:
            return self._encode_rows(rows, lengths, folder, progress)
        except OSError as exc:
            named = named_storage_error(exc, folder, action)
            if named is None:
                raise
            raise named from exc

    def _encode_rows(self, rows: list[Any], lengths: np.ndarray, folder: Path, progress: Any) -> tuple[Any, Any, int]:
        import torch

        from engine.models.encoding import encode_texts, model_inputs

        hidden_size = int(self.model.config.hidden_size)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        folder.mkdir(parents=True, exist_ok=True)
        states_path, done_path = folder / "states.npy", folder / "done.json"
        shape = (int(offsets[-1]), hidden_size)
        states: Any = None
        done = 0
        if states_path.is_file():  # a cancelled run's rows are kept: resume after them
            try:
                done = int(json.loads(done_path.read_text())["rows"])
                states = np.load(states_path, mmap_mode="r+")
            except (OSError, ValueError, KeyError, TypeError):
                states = None
            if states is None or states.shape != shape or states.dtype != np.float16 or not 0 <= done <= len(rows):
                states, done = None, 0
        if states is None:
            states = np.lib.format.open_memmap(states_path, mode="w+", dtype=np.float16, shape=shape)
            done_path.write_text(json.dumps({"rows": 0}))
        first = done
        order = np.argsort(lengths, kind="stable")  # short rows first: least padding
        todo_tokens = max(int(lengths[order[done:]].sum()), 1)
        done_tokens = 0
        self.model.eval()
        started = time.perf_counter()
        with torch.no_grad():
            for s in range(done, len(order), ENCODE_ROWS):
                self.cancel.raise_if_cancelled()
                idx = order[s : s + ENCODE_ROWS]
                batch = encode_texts(self.tokenizer, [rows[i].texts for i in idx], self.cfg.max_length)
                inputs = {k: v.to(self.device) for k, v in model_inputs(self.model, batch).items()}
                hidden = capture_inputs(self.model, inputs, self.cut).float().cpu().numpy().astype(np.float16)
                for j, i in enumerate(idx):
                    states[offsets[i] : offsets[i + 1]] = hidden[j, : lengths[i]]
                states.flush()
                done = s + len(idx)
                done_path.write_text(json.dumps({"rows": done}))
                done_tokens += int(lengths[idx].sum())
                elapsed = time.perf_counter() - started
                eta = elapsed * (todo_tokens - done_tokens) / max(done_tokens, 1)
                progress(done_tokens / todo_tokens, f"{self.spec.name}: encoding {done}/{len(order)} rows "
                         f"below layer {self.cut + 1}, ETA {_fmt(eta)}")
        return states, offsets, len(order) - first

    def _batch(self, states: Any, offsets: np.ndarray, lengths: np.ndarray, idx: np.ndarray) -> tuple[Any, Any]:
        import torch

        width = int(lengths[idx].max())
        hidden = np.zeros((len(idx), width, states.shape[1]), dtype=np.float32)
        mask = np.zeros((len(idx), width), dtype=np.int64)
        for j, i in enumerate(idx):
            hidden[j, : lengths[i]] = states[offsets[i] : offsets[i + 1]]
            mask[j, : lengths[i]] = 1
        return torch.from_numpy(hidden).to(self.device), torch.from_numpy(mask).to(self.device)

    # ------------------------------------------------------------------ training
    def _probe_head(self, states: Any, offsets: np.ndarray, lengths: np.ndarray, y: Any, n_train: int) -> float:
        """Fit the head alone on the frozen top layers' first-token output (seconds); its dev accuracy."""
        import torch

        from engine.models.quick import fit_head

        order = np.argsort(lengths, kind="stable")
        features = torch.zeros((len(lengths), int(self.model.config.hidden_size)))
        self.model.eval()
        with torch.no_grad():
            for s in range(0, len(order), self.cfg.eval_batch_size):
                self.cancel.raise_if_cancelled()
                part = order[s : s + self.cfg.eval_batch_size]
                hidden, mask = self._batch(states, offsets, lengths, part)
                features[torch.from_numpy(part)] = self._top_output(hidden, mask)[:, 0].float().cpu()
        head_device = next(iter(head_parameters(self.model))).device
        self.model.cpu()
        try:
            return fit_head(self.model, features[:n_train], y[:n_train].cpu(), features[n_train:], y[n_train:].cpu(),
                            seed=self.cfg.seed, cancel=self.cancel, **PROBE)
        finally:
            self.model.to(head_device)

    def _top_output(self, hidden: Any, mask: Any) -> Any:
        """The last hidden state computed by the tuned layers from their inputs."""
        return run_layers(self.model, hidden, mask, self.cut)

    def _train_top(self, states: Any, offsets: np.ndarray, lengths: np.ndarray, y: Any, n_train: int,
                   probe_accuracy: float, progress: Any) -> None:
        """Tune the top layers and the head; the best dev epoch is kept, the probed head (epoch 0) included."""
        import torch

        cfg = self.cfg
        name = self.spec.name
        tuned = [p for layer in _layers(self.model)[self.cut :] for p in layer.parameters()]
        params = tuned + [p for p in head_parameters(self.model) if all(p is not q for q in tuned)]
        for p in params:
            p.requires_grad_(True)
        torch.manual_seed(cfg.seed)
        optimizer = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
        train_idx = np.arange(n_train)
        dev_idx = np.arange(n_train, len(lengths))
        total = max(1, math.ceil(len(train_idx) / cfg.batch_size) * cfg.epochs)
        warmup = int(total * cfg.warmup_ratio)
        # epoch 0: the frozen layers with the probed head (kept when tuning never beats it on dev)
        best: list[Any] | None = [p.detach().clone() for p in params] if probe_accuracy == probe_accuracy else None
        self.state.best_accuracy, self.state.best_epoch = (probe_accuracy, 0) if best is not None else (-1.0, 0)
        stale = step = 0
        y = y.to(self.device)
        started = time.perf_counter()
        for epoch in range(cfg.epochs):
            self.cancel.raise_if_cancelled()
            epoch_started = time.perf_counter()
            torch.manual_seed(cfg.seed + 1000 * (epoch + 1))
            rng = np.random.default_rng(cfg.seed + epoch)
            # batches of similar length (little padding), in random order; rows of equal length (every
            # truncated row) are shuffled first, or a dataset stored label by label gives one-label batches
            shuffled = rng.permutation(train_idx)
            by_length = shuffled[np.argsort(lengths[shuffled], kind="stable")]
            batches = [by_length[s : s + cfg.batch_size] for s in range(0, len(by_length), cfg.batch_size)]
            self.model.train()
            losses = []
            for b in rng.permutation(len(batches)):
                self.cancel.raise_if_cancelled()
                idx = batches[b]
                lr_scale = (step + 1) / max(1, warmup) if step < warmup else max(0.0, (total - step) / max(1, total - warmup))
                for group in optimizer.param_groups:
                    group["lr"] = cfg.learning_rate * lr_scale
                hidden, mask = self._batch(states, offsets, lengths, idx)
                loss = torch.nn.functional.cross_entropy(run_top(self.model, hidden, mask, self.cut),
                                                         y[torch.from_numpy(idx).to(self.device)])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
                optimizer.step()
                step += 1
                losses.append(float(loss.detach()))
                elapsed = time.perf_counter() - started
                eta = elapsed * (total - step) / max(step, 1)
                progress(step / total, f"{name}: layer{'s' if cfg.tune_layers > 1 else ''} "
                         f"{self.cut + 1}–{self.cut + cfg.tune_layers} epoch {epoch + 1}/{cfg.epochs}, ETA {_fmt(eta)}")
            accuracy = self._top_accuracy(states, offsets, lengths, y, dev_idx)
            self.state.history.append({"epoch": epoch + 1,
                                       "train_loss": float(np.mean(losses)) if losses else float("nan"),
                                       "dev_accuracy": accuracy,
                                       "seconds": round(time.perf_counter() - epoch_started, 3)})
            self.state.epochs_done, self.state.step = epoch + 1, step
            if accuracy > self.state.best_accuracy or best is None:
                self.state.best_accuracy, self.state.best_epoch = accuracy, epoch + 1
                best = [p.detach().clone() for p in params]
                stale = 0
            else:
                stale += 1
            progress(step / total, f"{name}: epoch {epoch + 1}/{cfg.epochs}, dev accuracy {accuracy:.3f}")
            if cfg.patience is not None and stale >= cfg.patience:
                break
        keep_best(self.model, params, best)

    def _top_accuracy(self, states: Any, offsets: np.ndarray, lengths: np.ndarray, y: Any, idx: np.ndarray) -> float:
        import torch

        if len(idx) == 0:
            return float("nan")
        self.model.eval()
        ordered = idx[np.argsort(lengths[idx], kind="stable")]
        correct = 0
        with torch.no_grad():
            for s in range(0, len(ordered), self.cfg.eval_batch_size):
                part = ordered[s : s + self.cfg.eval_batch_size]
                hidden, mask = self._batch(states, offsets, lengths, part)
                predicted = run_top(self.model, hidden, mask, self.cut).argmax(-1)
                correct += int((predicted == y[torch.from_numpy(part).to(self.device)]).sum())
        return correct / len(idx)

    def _verify_top(self, rows: list[Any]) -> tuple[float, int]:
        """Max |logit difference| between the full model and the tuned path on up to VERIFY_ROWS rows."""
        import torch

        from engine.models.encoding import encode_texts, model_inputs

        rows = rows[:VERIFY_ROWS]
        if not rows:
            return 0.0, 0
        self.model.eval()
        with torch.no_grad():
            batch = encode_texts(self.tokenizer, [r.texts for r in rows], self.cfg.max_length)
            inputs = {k: v.to(self.device) for k, v in model_inputs(self.model, batch).items()}
            full = self.model(**inputs).logits
            hidden = capture_inputs(self.model, inputs, self.cut)
            tuned = run_top(self.model, hidden, inputs["attention_mask"], self.cut)
        diff = float((full - tuned).abs().max())
        check_verified(self.spec.name, diff, "tuned layers")
        return diff, len(rows)
