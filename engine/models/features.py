"""Frozen-encoder features of a dataset, computed once per backbone and cached in the project.

The ``cached-head`` strategy (:mod:`engine.models.quick`) needs, for every train and dev row,
the final hidden state of the first token (``[CLS]`` / ``<s>``): the only input of the
classification head of BERT- and MPNet-family classifiers. Encoding is the expensive part
(one forward pass per row); this module does it once and keeps the vectors in
``<project>_files/features/<backbone>-<key>/`` so that re-training a member, training a second
member on the same backbone with other head settings, or another preset reuses them.

Cache identity
--------------
The folder is keyed by backbone + its params + ``max_length`` + dataset version + the fields
read (:func:`feature_key`). Inside, rows are keyed by example id and a CRC of their texts, so a
row whose text changed is encoded again, and rows appended later are encoded on their own.

Resume
------
Rows are encoded in length order (least padding) in batches, and written in shards
(``part-NNNNN.safetensors``: ``ids``, ``crc``, ``x``) every :data:`SHARD_ROWS` rows, each shard
written atomically. A cancelled encode keeps its finished shards; the next call encodes only
the rows that are missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.io.output import new_file_mode
from engine.models.config import MemberSpec
from engine.models.data import Example
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.store import Project

__all__ = ["FEATURE_VERSION", "EncodeStats", "encode_features", "feature_key", "features_folder", "row_crc"]

#: Bumped when what is stored changes (old folders are then simply not found).
FEATURE_VERSION = 1
#: Rows per shard: a cancelled encode loses at most this many rows of work.
SHARD_ROWS = 256
#: What is cached: the last layer's hidden state at the first token.
KIND = "cls-last"


@dataclass(frozen=True)
class EncodeStats:
    """What one :func:`encode_features` call did.

    Attributes
    ----------
    folder
        The cache folder.
    encoded, reused
        Rows encoded now, rows read from the cache.
    seconds
        Wall time of the call.
    """

    folder: Path
    encoded: int
    reused: int
    seconds: float


def feature_key(spec: MemberSpec, dataset_id: int, fields: Sequence[str]) -> str:
    """16 hex digits naming the cache of ``spec``'s backbone on a dataset version."""
    payload = {
        "v": FEATURE_VERSION,
        "kind": KIND,
        "backbone": spec.backbone,
        "backbone_params": dict(spec.backbone_params),
        "max_length": spec.train.max_length,
        "dataset_id": int(dataset_id),
        "fields": list(fields),
    }
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def features_folder(project: Project, spec: MemberSpec, dataset_id: int, fields: Sequence[str]) -> Path:
    """``<project>_files/features/<backbone>-<key>`` (checked to lie inside the project: CB151 otherwise)."""
    from engine.store.paths import derived_folder

    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", spec.backbone).strip("._") or "backbone"
    return derived_folder(project, "features", f"{slug}-{feature_key(spec, dataset_id, fields)}",
                          what="the feature cache")


def row_crc(texts: Sequence[str]) -> int:
    """CRC-32 of a row's field texts (a changed text invalidates its cached vector)."""
    return zlib.crc32("\x1f".join(texts).encode("utf-8"))


def _read_cache(folder: Path) -> tuple[dict[int, tuple[int, np.ndarray]], int]:
    """``{example id: (crc, vector)}`` from every finished shard, and the next shard number."""
    from safetensors.numpy import load_file

    rows: dict[int, tuple[int, np.ndarray]] = {}
    parts = sorted(folder.glob("part-*.safetensors"))
    for part in parts:
        try:
            data = load_file(str(part))
        except Exception:  # a damaged shard is re-encoded, never trusted
            part.unlink(missing_ok=True)
            continue
        for i, crc, vec in zip(data["ids"].tolist(), data["crc"].tolist(), data["x"], strict=True):
            rows[int(i)] = (int(crc), vec)
    numbers = [int(p.stem.split("-")[1]) for p in parts if p.stem.split("-")[1].isdigit()]
    return rows, (max(numbers) + 1 if numbers else 0)


def _write_shard(folder: Path, number: int, ids: list[int], crcs: list[int], vectors: list[np.ndarray]) -> None:
    from safetensors.numpy import save_file

    tmp = folder / f".part-{number:05d}.tmp"
    save_file(
        {
            "ids": np.asarray(ids, dtype=np.int64),
            "crc": np.asarray(crcs, dtype=np.int64),
            "x": np.stack(vectors).astype(np.float32),
        },
        str(tmp),
    )
    os.chmod(tmp, new_file_mode())  # safetensors writes 0o600 whatever the umask
    os.replace(tmp, folder / f"part-{number:05d}.safetensors")


def encode_features(
    model: Any,
    tokenizer: Any,
    examples: Sequence[Example],
    folder: Path,
    *,
    max_length: int,
    device: Any,
    batch_size: int = 64,
    meta: dict[str, Any] | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> tuple[np.ndarray, EncodeStats]:
    """First-token features of ``examples`` (``[len(examples), hidden]``, float32), cached.

    Parameters
    ----------
    model
        An ``AutoModelForSequenceClassification``; its ``base_model`` encodes (eval mode, no
        gradients, fp32, so the cached vectors equal what the saved member computes).
    tokenizer
        Its fast tokenizer.
    examples
        Rows to encode (train and dev); duplicates by id are encoded once.
    folder
        Cache folder (:func:`features_folder`); created if missing.
    max_length, device, batch_size
        Truncation length, torch device, rows per forward pass.
    meta
        Written to ``meta.json`` (what the folder holds, for people reading the project).
    progress, cancel
        Progress over the rows still to encode (with an ETA) and the cancel token, checked per batch.

    Raises
    ------
    engine.errors.Cancelled
        Finished shards stay on disk; the next call resumes from them.
    """
    import torch

    from engine.models.encoding import encode_texts, model_inputs

    started = time.perf_counter()
    cancel = ensure_token(cancel)
    folder.mkdir(parents=True, exist_ok=True)
    if meta is not None and not (folder / "meta.json").is_file():
        (folder / "meta.json").write_text(json.dumps(meta, indent=1, default=str), encoding="utf-8")
    cached, next_part = _read_cache(folder)
    crcs = {ex.id: row_crc(ex.texts) for ex in examples}
    todo_by_id = {ex.id: ex for ex in examples if cached.get(ex.id, (None,))[0] != crcs[ex.id]}
    todo = list(todo_by_id.values())
    reused = len({ex.id for ex in examples}) - len(todo)
    if todo:
        progress(0.0, f"encoding {len(todo)} rows ({reused} cached)")
        lengths = encode_texts(tokenizer, [ex.texts for ex in todo], max_length, padding=False, return_tensors=None)
        token_counts = np.array([len(ids) for ids in lengths["input_ids"]], dtype=np.int64)
        order = np.argsort(token_counts, kind="stable")
        total_tokens = max(int(token_counts.sum()), 1)
        done_tokens = 0
        base = model.base_model
        model.eval()
        pending: tuple[list[int], list[int], list[np.ndarray]] = ([], [], [])
        done = 0
        encode_started = time.perf_counter()
        with torch.inference_mode():
            for s in range(0, len(order), batch_size):
                cancel.raise_if_cancelled()
                rows = [todo[i] for i in order[s : s + batch_size]]
                batch = encode_texts(tokenizer, [r.texts for r in rows], max_length)
                inputs = {k: v.to(device) for k, v in model_inputs(model, batch).items()}
                hidden = base(**inputs).last_hidden_state[:, 0].float().cpu().numpy()
                for r, vec in zip(rows, hidden, strict=True):
                    pending[0].append(r.id)
                    pending[1].append(crcs[r.id])
                    pending[2].append(vec)
                    cached[r.id] = (crcs[r.id], vec)
                if len(pending[0]) >= SHARD_ROWS:
                    _write_shard(folder, next_part, *pending)
                    next_part += 1
                    pending = ([], [], [])
                done += len(rows)
                # rows come shortest first: progress and ETA count tokens, not rows, or they run ahead
                done_tokens += int(token_counts[order[s : s + batch_size]].sum())
                elapsed = time.perf_counter() - encode_started
                eta = elapsed * (total_tokens - done_tokens) / max(done_tokens, 1)
                progress(done_tokens / total_tokens, f"encoding {done}/{len(todo)} rows, ETA {_fmt_eta(eta)}")
        if pending[0]:
            _write_shard(folder, next_part, *pending)
    matrix = np.stack([cached[ex.id][1] for ex in examples]).astype(np.float32) if examples else np.zeros((0, 0))
    return matrix, EncodeStats(folder, len(todo), reused, time.perf_counter() - started)


def _fmt_eta(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"
