"""Fine-tune ensemble members on a project's dataset, resumably.

:func:`train_member` fine-tunes one ``AutoModelForSequenceClassification`` on the train split,
evaluates dev accuracy after every epoch, keeps the best epoch (model selection) and writes
the result as safetensors into ``project.models_dir / <name>`` and a ``models`` row (through
the project's writer). :func:`train_ensemble` does that for every member.

Resume rules
------------
* A member whose ``models`` row exists with the same config hash (and whose weights are on
  disk) is **skipped**: nothing is loaded or trained.
* A member interrupted (cancel, crash) restarts from its **last finished epoch**: after each
  epoch the weights, optimizer moments and a JSON state are written to ``<folder>/checkpoint``;
  data order and dropout are seeded per epoch, so the resumed run matches an uninterrupted one.
* A row with the same name but another configuration raises
  :class:`~engine.models.errors.ModelConfigMismatchError` unless ``overwrite=True``.

Cancellation is checked at every batch boundary and raises :class:`engine.errors.Cancelled`.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.models.checkpoint import (
    TrainState,
    load_optimizer,
    load_weights,
    publish_files,
    save_optimizer,
    save_weights,
)
from engine.models.config import EnsembleConfig, MemberSpec
from engine.models.data import Example, TrainingData, training_data
from engine.models.device import release_memory
from engine.models.errors import ModelConfigMismatchError, require
from engine.models.store import (
    ModelInfo,
    delete_model_rows,
    find_model,
    get_model,
    insert_model,
)
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.store import Project
from engine.store.locks import member_lock
from engine.store.paths import derived_folder, safe_remove
from engine.store.runs import recorded_run

__all__ = ["EnsembleResult", "MemberResult", "member_folder", "train_ensemble", "train_member", "training_order"]

CHECKPOINT = "checkpoint"
BEST = "best.safetensors"


@dataclass(frozen=True)
class MemberResult:
    """What training one member produced.

    Attributes
    ----------
    model
        The stored model (row + folder).
    skipped
        True when an identical member was already trained (nothing was computed).
    resumed_from_epoch
        Epochs restored from a checkpoint (0 for a fresh start).
    dev_accuracy
        Accuracy of the kept (best) epoch on the dev rows.
    history
        Per-epoch ``{"epoch", "train_loss", "dev_accuracy", "seconds"}``.
    seconds
        Wall time of this call.
    """

    model: ModelInfo
    skipped: bool
    resumed_from_epoch: int
    dev_accuracy: float
    history: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(frozen=True)
class EnsembleResult:
    """The members of a trained ensemble and its vote threshold."""

    members: tuple[MemberResult, ...]
    threshold: int
    run_id: int | None = None

    @property
    def names(self) -> list[str]:
        return [m.model.name for m in self.members]


def member_folder(project: Project, name: str) -> Path:
    """``<name>_files/models/<name made safe for a folder name>``, checked to lie inside the project.

    Raises
    ------
    engine.errors.StoredLinkError
        ``models/`` or the member's folder is a symbolic link leading out of the project's files folder.
    """
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"
    return derived_folder(project, "models", slug, what=f"the folder of model {name!r}")  # created when trained


def train_ensemble(
    project: Project,
    dataset_id: int,
    config: EnsembleConfig,
    *,
    overwrite: bool = False,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> EnsembleResult:
    """Train (or reuse) every member of ``config`` on a dataset version.

    Parameters
    ----------
    project
        The open project.
    dataset_id
        The dataset version to train on.
    config
        The ensemble (odd number of members).
    overwrite
        Retrain members whose stored configuration differs instead of raising.
    progress, cancel
        Progress callback and cancel token. Each member's slice of the progress is its share of
        the estimated cost (:func:`member_cost` of the rows it will use), so the ETA shown for the whole
        ensemble reflects what remains (a 12-layer member is not counted like a 3-layer one, nor a member
        trained on a sample like one trained on every row).

    Returns
    -------
    EnsembleResult
        The members in the order of ``config`` (they are trained in :func:`training_order`).
    """
    cancel = ensure_token(cancel)
    trained: dict[str, MemberResult] = {}
    from engine.models.data import split_sizes

    counts = project.split_counts(dataset_id)
    order = training_order(config.members)
    costs = [member_cost(spec, split_sizes(counts, spec.train)) for spec in order]
    total = sum(costs) or 1.0
    bounds = [sum(costs[:i]) / total for i in range(len(costs) + 1)]
    for spec in config.members:  # refused (CB150/CB151) before a run is recorded or anything changes
        member_folder(project, spec.name)
        existing = find_model(project, spec.name)
        if existing is not None:
            _ = existing.folder
    with member_lock(project, config.names) as locks, \
            recorded_run(project, "train", dataset_id, {"ensemble": config.to_dict()}) as run:
        for lock in locks:
            lock.set_run(run.id)
        for i, spec in enumerate(order):
            sub = scaled(progress, bounds[i], bounds[i + 1])
            trained[spec.name] = _train_member(project, dataset_id, spec, overwrite=overwrite, progress=sub,
                                               cancel=cancel, run_id=run.id)
        results = [trained[spec.name] for spec in config.members]
        run.result = {r.model.name: {"dev_accuracy": r.dev_accuracy, "skipped": r.skipped} for r in results}
    progress(1.0, "Ensemble trained")
    return EnsembleResult(tuple(results), config.threshold, run.id)


def training_order(members: Sequence[MemberSpec]) -> list[MemberSpec]:
    """The order :func:`train_ensemble` trains ``members`` in: those that explain by default first.

    A member whose whole network is trained (:data:`~engine.models.config.EXPLAINING_STRATEGIES`)
    explains by default; one trained on its top layer or head only (the large backbones under
    ``sample-cpu``, the CPU default) only judges, and is by far the slowest to train there (MPNet:
    about 11 of the demo's 15 minutes on 2 cores). Trained last, it no longer delays the first
    highlights: the stored explainers can explain rows while it trains. Otherwise the order of
    ``members`` is kept.

    >>> from engine.models.config import TrainConfig
    >>> specs = [MemberSpec("a", "mpnet-base", {}, TrainConfig(strategy="cached-top")),
    ...          MemberSpec("b", "minilm-l6"), MemberSpec("c", "minilm-l3")]
    >>> [s.name for s in training_order(specs)]
    ['b', 'c', 'a']
    """
    from engine.models.config import EXPLAINING_STRATEGIES

    return sorted(members, key=lambda spec: spec.train.strategy not in EXPLAINING_STRATEGIES)


def member_cost(spec: MemberSpec, rows: tuple[int, int] | None = None) -> float:
    """Relative training cost of a member: backbone cost per token × tokens per input × epochs (× rows).

    A ``cached-head`` member costs one encode pass instead (forward only, no gradients: the backbone's
    :meth:`~engine.models.backbone.Backbone.forward_share` of an epoch), whatever its head's epoch count,
    since training the head on cached features takes seconds. A ``cached-top`` member costs the
    encode pass below its tuned layers plus, per epoch, the tuned layers' share of a fine-tuning
    epoch (:func:`engine.models.top.top_cost`).

    Parameters
    ----------
    spec
        The member.
    rows
        ``(train rows, dev rows)`` the member will use (:func:`engine.models.data.split_sizes`): the cost is then
        per train row times those rows, plus a forward pass over the dev rows (once for the cached strategies,
        every epoch for fine-tuning), so members trained on samples of different sizes compare right.
        ``None``: the cost of one train row.

    Only ratios between members matter (they split an ensemble's progress). An unknown backbone
    counts as MiniLM-L6.
    """
    from engine.errors import CounterbiasError
    from engine.models.quick import ENCODE_SHARE
    from engine.models.registry import get_backbone

    try:
        backbone = get_backbone(spec.backbone, **dict(spec.backbone_params))
        per_token, encode, layers = backbone.relative_cost(), backbone.forward_share(), backbone.layers()
    except CounterbiasError:
        per_token, encode, layers = 1.0, ENCODE_SHARE, 6
    if spec.train.strategy == "cached-head":
        share, dev_share = encode, encode
    elif spec.train.strategy == "cached-top":
        from engine.models.top import top_cost

        share, dev_share = top_cost(layers, spec.train.tune_layers, spec.train.epochs, encode), encode
    else:
        share, dev_share = spec.train.epochs, spec.train.epochs * encode
    unit = max(per_token, 1e-6) * spec.train.max_length
    if rows is None:
        return unit * share
    n_train, n_dev = rows
    return unit * (share * max(int(n_train), 0) + dev_share * max(int(n_dev), 0))


def train_member(
    project: Project,
    dataset_id: int,
    spec: MemberSpec,
    *,
    overwrite: bool = False,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
    run_id: int | None = None,
) -> MemberResult:
    """Fine-tune one member (or reuse / resume it); see the module notes.

    Raises
    ------
    ModelConfigMismatchError
        A model of that name exists with another configuration and ``overwrite`` is false.
    engine.models.errors.TrainingDataError
        No usable train rows.
    engine.store.locks.MemberBusyError
        Another run is training a member of that name.
    engine.errors.StoredPathError, engine.errors.StoredLinkError
        The member's stored folder lies outside the project: nothing is deleted or trained.
    engine.errors.Cancelled
        When ``cancel`` is set; the last finished epoch stays on disk for a resume.
    """
    with member_lock(project, [spec.name]):
        return _train_member(project, dataset_id, spec, overwrite=overwrite, progress=progress, cancel=cancel,
                             run_id=run_id)


def _train_member(
    project: Project,
    dataset_id: int,
    spec: MemberSpec,
    *,
    overwrite: bool,
    progress: ProgressFn,
    cancel: CancelToken | None,
    run_id: int | None,
) -> MemberResult:
    """:func:`train_member` with the member's lock held by the caller."""
    started = time.perf_counter()
    cancel = ensure_token(cancel)
    config_hash = spec.config_hash(dataset_id)
    folder = member_folder(project, spec.name)
    existing = find_model(project, spec.name)
    if existing is not None:
        same = existing.config_hash == config_hash
        old_folder = existing.folder  # refused (CB150/CB151) before anything is deleted when it lies outside
        if same and (old_folder / "model.safetensors").is_file():
            progress(1.0, f"{spec.name}: already trained, skipped")
            return MemberResult(existing, True, 0, float(existing.metrics.get("dev_accuracy", float("nan"))))
        if not same and not overwrite:
            raise ModelConfigMismatchError(
                f"A model called {spec.name!r} already exists with another configuration.",
                "Choose another member name, or retrain with overwrite=True (its attributions are deleted).",
            )
        project.writer.run(delete_model_rows, existing.id)
        safe_remove(project, old_folder)

    require("torch")
    require("transformers")
    data = training_data(project, dataset_id, spec)
    if spec.train.strategy == "cached-head":
        from engine.models.quick import CachedHeadTrainer

        trainer: Any = CachedHeadTrainer(project, dataset_id, spec, data, folder, config_hash, progress, cancel)
    elif spec.train.strategy == "cached-top":
        from engine.models.top import CachedTopTrainer

        trainer = CachedTopTrainer(project, dataset_id, spec, data, folder, config_hash, progress, cancel)
    else:
        trainer = _Trainer(spec, data, folder, config_hash, progress, cancel, project=project)
    try:
        trainer.run()
    finally:
        # the weights are on disk (or the run failed): the model and optimizer are not needed any more,
        # and a cancelled or failed member must not keep gigabytes resident
        trainer.release()
        release_memory()

    dataset = project.dataset(dataset_id)
    params = {
        "spec": spec.to_dict(),
        "config_hash": config_hash,
        "dataset_id": dataset_id,
        "labels": list(data.labels),
        "fields": list(data.fields),
        "task": dataset.task,
    }
    state = trainer.state
    metrics = {
        "dev_accuracy": state.best_accuracy,
        "best_epoch": state.best_epoch,
        "epochs_run": state.epochs_done,
        "train_rows": len(data.train),
        "dev_rows": len(data.dev),
        "dev_source": data.dev_source,
        "device": str(trainer.device),
        "precision": trainer.precision.label,
        "history": state.history,
        "preset": spec.train.preset,
        "strategy": spec.train.strategy,
        "seconds": round(time.perf_counter() - started, 2),
        **getattr(trainer, "extra", {}),
    }
    rel = folder.relative_to(project.files_dir).as_posix()
    model_id = project.writer.run(
        lambda conn: insert_model(
            conn, name=spec.name, backbone=spec.backbone, path=rel, params=params, metrics=metrics, run_id=run_id
        )
    )
    info = get_model(project, model_id)
    progress(1.0, f"{spec.name}: dev accuracy {state.best_accuracy:.3f}")
    return MemberResult(
        info, False, trainer.resumed_from, state.best_accuracy, list(state.history), time.perf_counter() - started
    )


# --------------------------------------------------------------------------- the loop


class _Trainer:
    """One member's fine-tuning loop (torch imported lazily by the caller's first use)."""

    def __init__(
        self,
        spec: MemberSpec,
        data: TrainingData,
        folder: Path,
        config_hash: str,
        progress: ProgressFn,
        cancel: CancelToken,
        *,
        project: Project,
    ) -> None:
        from engine.models.device import resolve_device, resolve_precision
        from engine.models.registry import get_backbone

        self.project = project
        self.spec = spec
        self.cfg = spec.train
        self.data = data
        self.folder = folder
        self.ckpt = folder / CHECKPOINT
        self.config_hash = config_hash
        self.progress = progress
        self.cancel = cancel
        self.backbone = get_backbone(spec.backbone, **spec.backbone_params)
        self.device = resolve_device(self.cfg.device)
        self.precision = resolve_precision(self.device, self.cfg.mixed_precision)
        self.state = TrainState(config_hash)
        self.resumed_from = 0

    # ------------------------------------------------------------------ setup
    def _batches(self, rows: Sequence[Example], order: np.ndarray, size: int) -> list[list[Example]]:
        return [[rows[i] for i in order[s : s + size]] for s in range(0, len(order), size)]

    def _encode(self, rows: Sequence[Example]) -> Any:
        import torch

        from engine.models.encoding import encode_texts, model_inputs

        batch = encode_texts(self.tokenizer, [r.texts for r in rows], self.cfg.max_length)
        inputs = {k: v.to(self.device) for k, v in model_inputs(self.model, batch).items()}
        labels = torch.tensor([r.label for r in rows], device=self.device)
        return inputs, labels

    def _setup(self) -> None:
        import torch

        self.progress(0.0, f"{self.spec.name}: loading {self.spec.backbone}")
        self.tokenizer = self.backbone.load_tokenizer()
        id2label = dict(enumerate(self.data.labels))
        self.model = self.backbone.build_model(len(self.data.labels), id2label, seed=self.cfg.seed)
        self.model.to(self.device)
        no_decay = ("bias", "LayerNorm.weight", "layer_norm.weight", "LayerNorm.bias")
        params = list(self.model.named_parameters())
        groups = [
            {"params": [p for n, p in params if not any(k in n for k in no_decay)], "weight_decay": self.cfg.weight_decay},
            {"params": [p for n, p in params if any(k in n for k in no_decay)], "weight_decay": 0.0},
        ]
        self.optimizer = torch.optim.AdamW(groups, lr=self.cfg.learning_rate)
        self.steps_per_epoch = math.ceil(len(self.data.train) / self.cfg.batch_size)
        self.total_steps = self.steps_per_epoch * self.cfg.epochs
        warmup = int(self.total_steps * self.cfg.warmup_ratio)

        def schedule(step: int) -> float:
            if step < warmup:
                return (step + 1) / max(1, warmup)
            return max(0.0, (self.total_steps - step) / max(1, self.total_steps - warmup))

        self.schedule = schedule
        self.scaler = torch.amp.GradScaler(self.device.type) if self.precision.use_scaler else None

    def _restore(self) -> None:
        """Resume from the last epoch checkpoint of the same configuration, else start clean."""
        state = TrainState.read(self.ckpt)
        weights, optim = self.ckpt / "model.safetensors", self.ckpt / "optimizer.safetensors"
        if state is not None and state.config_hash == self.config_hash and weights.is_file() and optim.is_file():
            load_weights(self.model, weights)
            load_optimizer(self.optimizer, optim)
            self.state = state
            self.resumed_from = state.epochs_done
            return
        safe_remove(self.project, self.folder)  # a link is removed itself, never followed
        self.folder.mkdir(parents=True)

    # ------------------------------------------------------------------ run
    def release(self) -> None:
        """Drop the model, optimizer and tokenizer (the state and metrics stay)."""
        for attr in ("model", "optimizer", "scaler", "tokenizer"):
            if hasattr(self, attr):
                setattr(self, attr, None)

    def run(self) -> None:
        import torch

        from engine.models.device import autocast

        self._setup()
        self._restore()
        cfg = self.cfg
        name = self.spec.name
        started = time.perf_counter()
        steps_this_call = 0
        stale = 0
        for epoch in range(self.state.epochs_done, cfg.epochs):
            epoch_started = time.perf_counter()
            torch.manual_seed(cfg.seed + 1000 * (epoch + 1))
            order = np.random.default_rng(cfg.seed + epoch).permutation(len(self.data.train))
            self.model.train()
            losses = []
            for b, rows in enumerate(self._batches(self.data.train, order, cfg.batch_size)):
                self.cancel.raise_if_cancelled()
                inputs, labels = self._encode(rows)
                for group in self.optimizer.param_groups:
                    group["lr"] = cfg.learning_rate * self.schedule(self.state.step)
                with autocast(self.device, self.precision):
                    logits = self.model(**inputs).logits
                loss = torch.nn.functional.cross_entropy(logits.float(), labels)
                self.optimizer.zero_grad(set_to_none=True)
                if self.scaler is not None:
                    self.scaler.scale(loss).backward()
                    self.scaler.unscale_(self.optimizer)
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
                else:
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
                    self.optimizer.step()
                self.state.step += 1
                steps_this_call += 1
                losses.append(float(loss.detach()))
                done = epoch * self.steps_per_epoch + b + 1
                per_step = (time.perf_counter() - started) / steps_this_call
                eta = per_step * (self.total_steps - done)
                self.progress(
                    done / self.total_steps * 0.98,
                    f"{name}: epoch {epoch + 1}/{cfg.epochs}, step {b + 1}/{self.steps_per_epoch}, "
                    f"loss {np.mean(losses[-20:]):.3f}, ETA {_fmt_eta(eta)}",
                )
            self.cancel.raise_if_cancelled()
            accuracy = self.evaluate(self.data.dev)
            self.state.history.append(
                {
                    "epoch": epoch + 1,
                    "train_loss": float(np.mean(losses)) if losses else float("nan"),
                    "dev_accuracy": accuracy,
                    "seconds": round(time.perf_counter() - epoch_started, 2),
                }
            )
            if accuracy > self.state.best_accuracy:
                self.state.best_accuracy, self.state.best_epoch = accuracy, epoch + 1
                save_weights(self.model, self.ckpt / BEST)
                stale = 0
            else:
                stale += 1
            self.state.epochs_done = epoch + 1
            save_weights(self.model, self.ckpt / "model.safetensors")
            save_optimizer(self.optimizer, self.ckpt / "optimizer.safetensors")
            self.state.write(self.ckpt)
            self.progress(
                (epoch + 1) / cfg.epochs * 0.98, f"{name}: epoch {epoch + 1} dev accuracy {accuracy:.3f}"
            )
            if cfg.patience is not None and stale >= cfg.patience:
                break
        self._finish()

    def _finish(self) -> None:
        """Keep the best epoch as the member's final safetensors weights."""
        if (self.ckpt / BEST).is_file():
            load_weights(self.model, self.ckpt / BEST)
        from engine.models.hf import quiet_transformers

        with quiet_transformers():
            self.model.save_pretrained(str(self.folder))
            self.tokenizer.save_pretrained(str(self.folder))
        for stale in self.folder.glob("*.bin"):
            safe_remove(self.project, stale)
        safe_remove(self.project, self.ckpt)
        (self.folder / "train_state.json").write_text(
            json.dumps({"config_hash": self.config_hash, "history": self.state.history}, indent=1), encoding="utf-8"
        )
        publish_files(self.folder)

    def evaluate(self, rows: Sequence[Example]) -> float:
        """Accuracy on ``rows`` (NaN when there are none)."""
        import torch

        from engine.models.device import autocast

        if not rows:
            return float("nan")
        self.model.eval()
        correct = 0
        order = np.argsort([sum(len(t) for t in r.texts) for r in rows])
        with torch.inference_mode():
            for batch in self._batches(rows, order, self.cfg.eval_batch_size):
                self.cancel.raise_if_cancelled()
                inputs, labels = self._encode(batch)
                with autocast(self.device, self.precision):
                    logits = self.model(**inputs).logits
                correct += int((logits.argmax(-1) == labels).sum())
        return correct / len(rows)


def _fmt_eta(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"
