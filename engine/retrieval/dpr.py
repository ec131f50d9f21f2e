"""CF-DPR (Dixit et al., CORE §3.1): a counterfactual retriever trained on human counterfactual pairs.

A seed pair is ``(query, positive)`` or ``(query, positive, query_label)``: the positive is a human
counterfactual of the query (its minimal revision to another label, as in CAD). One encoder, started
from the bundled all-MiniLM-L6-v2 (mean pooling, unit vectors), encodes both sides; a role marker
(:data:`QUERY_PREFIX` / :data:`PASSAGE_PREFIX`) tells it which side it reads, so that the query side
can learn to look for the other label. The loss is DPR's InfoNCE over cosine × :data:`SCALE`: the
positive against every other positive of the batch and, with ``hard_negatives``, two hard negatives
per query, as in the paper's appendix (a paraphrase and the query itself):

* the nearest other query (by the untrained encoder) that has the query's label (any other query when
  the pairs carry no labels): a same-label neighbour, standing in for the paper's paraphrase;
* the query's own text read as a passage: the closest same-label text there is. Without it a minimal
  revision is already the nearest passage to its original and there is almost nothing to learn (in a
  trial on 200 CAD sentence pairs, no markers and only the neighbour as hard negative moved the held-out
  "nearest other text has the other label" rate from 0.40 to 0.43; with both, 0.45 to 0.72).

The fine-tuned weights are saved with ``save_pretrained`` beside :data:`RECORD` (base, settings, pair
count, seed, a hash of the weights); :class:`TrainedEncoder` reopens them as a corpus encoder
(registered as ``"trained"``) and retrievers live in ``<project>_files/retrievers/<name>/``
(:func:`retriever_dir`). Heavy libraries (torch, transformers) are imported inside functions.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import shlex
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.retrieval.encoders import Encoder, encode_queries, normalise_rows
from engine.retrieval.pairs import MIN_PAIRS, Pair, clean_pairs
from engine.retrieval.errors import (
    EncoderError,
    RetrieverNotFoundError,
    TooFewPairsError,
)

if TYPE_CHECKING:
    from engine.store import Project

__all__ = [
    "MIN_PAIRS",
    "PASSAGE_PREFIX",
    "QUERY_PREFIX",
    "RECORD",
    "RetrieverScores",
    "RetrieverTrainResult",
    "TrainedEncoder",
    "evaluate_retriever",
    "evaluate_top1",
    "retriever_dir",
    "train_retriever",
]

#: Role markers put before a query / a passage (corpus sentence) by the trained retriever.
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
#: The JSON record saved beside the weights.
RECORD = "retriever.json"
#: Cosine similarities are multiplied by this before the softmax (as sentence-transformers' MNRL loss).
SCALE = 20.0
#: Bases a retriever can start from (name -> where its weights are).
BASES = ("minilm-l6",)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

# ------------------------------------------------------------------------------------- the model
def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _base_dir(base: str) -> Path:
    if base not in BASES:
        raise EncoderError(f"No retriever base {base!r}.", f"Use one of: {', '.join(BASES)}.")
    from engine.models.backbones import _minilm_l6_dir

    return _minilm_l6_dir()


def _load(folder: Path, device: str) -> tuple[Any, Any]:
    """Tokenizer and encoder of ``folder``: safetensors weights only, never custom code.

    Raises
    ------
    engine.models.errors.UnsafeWeightsError
        Only pickled weights (CB508).
    engine.models.errors.InvalidWeightsError, engine.models.errors.RemoteCodeError
        Empty or invalid safetensors (CB510); a config with ``auto_map`` (CB511).
    """
    from transformers import AutoModel, AutoTokenizer

    from engine.models.hf import check_model_folder

    check_model_folder(folder, what=f"the retriever folder {folder}")
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False)
    model = AutoModel.from_pretrained(str(folder), local_files_only=True, use_safetensors=True,
                                      trust_remote_code=False).to(device)
    return tokenizer, model


def _forward(tokenizer: Any, model: Any, texts: Sequence[str], max_length: int, device: str) -> Any:
    """Unit-length mean-pooled vectors (a torch tensor; gradients flow when the model trains)."""
    import torch.nn.functional as F

    batch = tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    batch = {k: v.to(device) for k, v in batch.items()}
    hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return F.normalize(pooled, dim=-1)


def _embed(tokenizer: Any, model: Any, texts: Sequence[str], *, max_length: int, batch_size: int, device: str,
           progress: ProgressFn = no_progress, cancel: CancelToken | None = None) -> np.ndarray:
    import torch

    cancel = ensure_token(cancel)
    model.eval()
    order = np.argsort([len(t) for t in texts], kind="stable")  # similar lengths pad less
    out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            cancel.raise_if_cancelled()
            rows = order[start:start + batch_size]
            out[rows] = _forward(tokenizer, model, [texts[i] for i in rows], max_length, device).float().cpu().numpy()
            done = min(len(texts), start + batch_size)
            progress(done / max(len(texts), 1), f"encoded {done:,} texts")
    return normalise_rows(out)


def _hard_negatives(vectors: np.ndarray, pairs: Sequence[Pair]) -> list[int]:
    """For each query, the nearest other query with its label (``-1`` when there is none)."""
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    labels = [p[2] for p in pairs]
    positives = [p[1] for p in pairs]
    out = []
    for i, row in enumerate(sims):
        for j in np.argsort(-row, kind="stable"):
            if not np.isfinite(row[j]):
                break
            if (labels[i] is None or labels[j] == labels[i]) and pairs[j][0] not in (positives[i], pairs[i][0]):
                out.append(int(j))
                break
        else:
            out.append(-1)
    return out


def _batches(pairs: Sequence[Pair], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffled batches of pair indexes, of similar query lengths (sorted within windows of 8 batches): less padding."""
    order = list(range(len(pairs)))
    rng.shuffle(order)
    window = batch_size * 8
    batches = []
    for start in range(0, len(order), window):
        part = sorted(order[start:start + window], key=lambda i: len(pairs[i][0]))
        batches += [part[k:k + batch_size] for k in range(0, len(part), batch_size)]
    rng.shuffle(batches)
    return batches


def _weights_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for file in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin")):
        with open(file, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class RetrieverTrainResult:
    """What :func:`train_retriever` did.

    Attributes
    ----------
    path
        The folder holding the weights and :data:`RECORD`.
    record
        The saved record (base, settings, pairs, seed, weights hash).
    losses
        The mean loss of each epoch.
    """

    path: Path
    pairs: int
    steps: int
    seconds: float
    losses: list[float] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)


def train_retriever(
    pairs: Sequence[Sequence[Any]],
    *,
    out_dir: str | Path,
    base: str = "minilm-l6",
    epochs: int = 1,
    batch_size: int = 16,
    max_length: int = 64,
    hard_negatives: bool = True,
    lr: float = 2e-5,
    seed: int = 0,
    train_layers: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> RetrieverTrainResult:
    """Fine-tune the base encoder as a counterfactual retriever and save it into ``out_dir``.

    Parameters
    ----------
    pairs
        ``(query, positive)`` or ``(query, positive, query_label)``: the positive is a human
        counterfactual of the query. Labels pick the same-label hard negative.
    out_dir
        Replaced by the trained retriever when training finishes (untouched on cancel or error).
    epochs, batch_size, max_length, lr, seed
        AdamW (weight decay 0.01, gradients clipped at 2.0 as in the paper) over shuffled batches.
    hard_negatives
        Add the same-label neighbour and the query itself (as a passage) to each query's negatives;
        without, only the other positives of the batch are negatives.
    train_layers
        Train only the top this many transformer layers (``None``: all); the word embeddings are never
        trained. Fewer layers train faster on a CPU.

    Raises
    ------
    engine.retrieval.errors.TooFewPairsError
        Fewer than :data:`MIN_PAIRS` usable pairs.
    engine.errors.Cancelled
        When ``cancel`` is set (checked every step).
    """
    import torch
    import torch.nn.functional as F

    cancel = ensure_token(cancel)
    clean = clean_pairs(pairs)
    if len(clean) < MIN_PAIRS:
        raise TooFewPairsError(f"{len(clean)} usable pairs: a retriever needs at least {MIN_PAIRS}.",
                               "Give more (query, counterfactual) pairs.")
    if epochs < 1 or batch_size < 2 or max_length < 8:
        raise TooFewPairsError(f"epochs {epochs}, batch size {batch_size}, max length {max_length} cannot train.",
                               "Use epochs ≥ 1, batch size ≥ 2 and max length ≥ 8.")
    started = time.perf_counter()
    out_dir = Path(out_dir)
    device = _device()
    torch.manual_seed(seed)
    tokenizer, model = _load(_base_dir(base), device)

    mined: list[int] = []
    if hard_negatives:
        vectors = _embed(tokenizer, model, [p[0] for p in clean], max_length=max_length, batch_size=64,
                         device=device, progress=scaled(progress, 0.0, 0.1), cancel=cancel)
        mined = _hard_negatives(vectors, clean)

    steps_per_epoch = math.ceil(len(clean) / batch_size)
    total = epochs * steps_per_epoch
    model.embeddings.requires_grad_(False)  # word embeddings stay: words outside the seed pairs keep their meaning
    layers = model.encoder.layer
    for layer in layers[:max(0, len(layers) - train_layers) if train_layers is not None else 0]:
        layer.requires_grad_(False)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trainable, lr=lr, weight_decay=0.01)
    rng = random.Random(seed)
    losses: list[float] = []
    step = 0
    for epoch in range(epochs):
        model.train()
        epoch_loss = 0.0
        for rows in _batches(clean, batch_size, rng):
            cancel.raise_if_cancelled()
            docs = [PASSAGE_PREFIX + clean[i][1] for i in rows]
            if hard_negatives:
                docs += [PASSAGE_PREFIX + clean[mined[i]][0] for i in rows if mined[i] >= 0]
                docs += [PASSAGE_PREFIX + clean[i][0] for i in rows]
            q = _forward(tokenizer, model, [QUERY_PREFIX + clean[i][0] for i in rows], max_length, device)
            d = _forward(tokenizer, model, docs, max_length, device)
            loss = F.cross_entropy(SCALE * (q @ d.T), torch.arange(len(rows), device=device))
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 2.0)
            optimiser.step()
            step += 1
            epoch_loss += float(loss.detach())
            progress(0.1 + 0.85 * step / total, f"epoch {epoch + 1}/{epochs}, step {step}/{total}, "
                     f"loss {float(loss.detach()):.3f}")
        losses.append(epoch_loss / steps_per_epoch)

    cancel.raise_if_cancelled()
    staging = out_dir.with_name(out_dir.name + ".partial")
    _remove(staging)
    staging.mkdir(parents=True)
    model.save_pretrained(str(staging))
    tokenizer.save_pretrained(str(staging))
    record = {
        "kind": "cf-dpr", "base": base, "pairs": len(clean),
        "labelled_pairs": sum(p[2] is not None for p in clean),
        "settings": {"epochs": epochs, "batch_size": batch_size, "max_length": max_length,
                     "hard_negatives": hard_negatives, "lr": lr, "scale": SCALE, "train_layers": train_layers,
                     "query_prefix": QUERY_PREFIX, "passage_prefix": PASSAGE_PREFIX},
        "seed": seed, "steps": step, "losses": [round(x, 5) for x in losses], "device": device,
        "weights_sha256": _weights_hash(staging), "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (staging / RECORD).write_text(json.dumps(record, indent=2), encoding="utf-8")
    from engine.models.checkpoint import publish_files

    publish_files(staging)  # safetensors writes 0o600 whatever the umask
    _remove(out_dir)
    staging.rename(out_dir)
    _TrainedModels.forget(out_dir)
    progress(1.0, f"saved to {out_dir}")
    return RetrieverTrainResult(out_dir, len(clean), step, time.perf_counter() - started, losses, record)


def _remove(path: Path) -> None:
    """Remove a folder being replaced; a symbolic link is removed itself, never followed."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


# ------------------------------------------------------------------------------- the encoder
class _TrainedModels:
    """Loaded retrievers by folder and weights hash (one copy per process)."""

    _cache: dict[tuple[str, str], tuple[Any, Any, str]] = {}

    @classmethod
    def get(cls, folder: Path, sha: str) -> tuple[Any, Any, str]:
        key = (str(folder.resolve()), sha)
        if key not in cls._cache:
            device = _device()
            cls._cache[key] = (*_load(folder, device), device)
        return cls._cache[key]

    @classmethod
    def forget(cls, folder: Path) -> None:
        for key in [k for k in cls._cache if k[0] == str(folder.resolve())]:
            del cls._cache[key]


class TrainedEncoder:
    """A retriever trained by :func:`train_retriever`, as a corpus encoder (registered as ``"trained"``).

    :meth:`encode` reads texts as passages (the corpus side, what indexes hold);
    :meth:`encode_queries` reads them as queries (used by :class:`engine.retrieval.retrieve.Retriever`).

    Parameters
    ----------
    path
        The folder :func:`train_retriever` saved (see :func:`retriever_dir`).
    max_length, batch_size
        Tokens per text; texts per forward pass.

    Raises
    ------
    engine.retrieval.errors.EncoderError
        When ``path`` holds no trained retriever.
    engine.models.errors.UnsafeWeightsError, engine.models.errors.InvalidWeightsError
        Pickled weights only (CB508); empty or invalid safetensors (CB510).
    engine.models.errors.RemoteCodeError
        A ``config.json`` asking for custom code (CB511).
    """

    name = "trained"

    def __init__(self, path: str | Path | None = None, max_length: int = 64, batch_size: int = 64) -> None:
        if path is None:
            raise EncoderError("The trained encoder needs the retriever's folder.",
                               "Pass path=... (or --retriever NAME on the command line).")
        self.path = Path(path)
        record = self.path / RECORD
        if not record.is_file():
            raise EncoderError(f"{self.path} holds no trained retriever ({RECORD} is missing).",
                               "Train one with 'counterbias train-retriever' and give its folder.")
        from engine.models.hf import check_model_folder

        check_model_folder(self.path, what=f"the retriever folder {self.path}")  # CB508/CB510/CB511, nothing written
        raw = record.read_bytes()
        self.record: dict[str, Any] = json.loads(raw)
        self.sha = hashlib.sha256(raw).hexdigest()
        self.max_length = int(max_length)
        self.batch_size = int(batch_size)
        self.dimension = 384

    @property
    def key(self) -> str:
        return f"{self.name}-{self.sha[:10]}-len{self.max_length}"

    def _encode(self, texts: Sequence[str], prefix: str, progress: ProgressFn,
                cancel: CancelToken | None) -> np.ndarray:
        tokenizer, model, device = _TrainedModels.get(self.path, self.sha)
        return _embed(tokenizer, model, [prefix + (t or "") for t in texts], max_length=self.max_length,
                      batch_size=self.batch_size, device=device, progress=progress, cancel=cancel)

    def encode(self, texts: Sequence[str], *, progress: ProgressFn = no_progress,
               cancel: CancelToken | None = None) -> np.ndarray:
        """Passages (corpus sentences): ``(len(texts), 384)`` float32 unit rows."""
        return self._encode(texts, PASSAGE_PREFIX, progress, cancel)

    def encode_queries(self, texts: Sequence[str], *, progress: ProgressFn = no_progress,
                       cancel: CancelToken | None = None) -> np.ndarray:
        """Queries (texts whose counterfactuals are sought): ``(len(texts), 384)`` float32 unit rows."""
        return self._encode(texts, QUERY_PREFIX, progress, cancel)


def retriever_dir(project: Project, name: str) -> Path:
    """``<project>_files/retrievers/<name>/`` (the parent is created, the folder itself is not).

    Raises
    ------
    engine.retrieval.errors.RetrieverNotFoundError
        For a name that is not a safe folder name.
    engine.errors.StoredLinkError
        ``retrievers/`` or the retriever's folder is a symbolic link leading out of the project.
    """
    if not _NAME.match(name or ""):
        raise RetrieverNotFoundError(f"{name!r} is not a usable retriever name.",
                                     "Use letters, digits, '.', '_' or '-' (at most 64, not starting with '.').")
    from engine.store.paths import derived_folder

    path = derived_folder(project, "retrievers", name, what=f"the folder of retriever {name!r}")  # CB151: a link out
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def trained_retriever(project: Project, name: str) -> Path:
    """The folder of the trained retriever ``name`` of the project.

    Raises
    ------
    engine.retrieval.errors.RetrieverNotFoundError
        When none of that name has been trained.
    """
    folder = retriever_dir(project, name)
    if not (folder / RECORD).is_file():
        known = sorted(p.name for p in folder.parent.iterdir() if (p / RECORD).is_file())
        raise RetrieverNotFoundError(f"No trained retriever {name!r} in this project.",
                                     f"Train it with: counterbias train-retriever PROJECT {shlex.quote(name)} --pairs FILE"
                                     + (f", or use one of: {', '.join(known)}." if known else "."))
    return folder


# ------------------------------------------------------------------------------- evaluation
@dataclass(frozen=True)
class RetrieverScores:
    """Top-1 figures of an encoder on held-out pairs (fractions of the queries).

    Attributes
    ----------
    top1
        The query's own counterfactual is the nearest of all held-out texts (every query's and every
        counterfactual's, the query's own text included): it beats the query itself read as a passage.
    top1_positives
        The own counterfactual is the nearest of the held-out counterfactuals only.
    opposite_top1
        The nearest text of the *other* held-out pairs has the other label (needs labels; else ``None``):
        what a retriever is for when the corpus does not hold the query's counterfactual.
    """

    pairs: int
    top1: float
    top1_positives: float
    opposite_top1: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": self.pairs, "top1": round(self.top1, 4), "top1_positives": round(self.top1_positives, 4),
                "opposite_top1": None if self.opposite_top1 is None else round(self.opposite_top1, 4)}


def evaluate_retriever(encoder: Encoder, pairs: Sequence[Sequence[Any]], *,
                       cancel: CancelToken | None = None) -> RetrieverScores:
    """Score ``encoder`` on held-out pairs (see :class:`RetrieverScores`); queries via :func:`encode_queries`."""
    clean = clean_pairs(pairs)
    n = len(clean)
    if n < 2:
        raise TooFewPairsError(f"{n} held-out pairs cannot be ranked.", "Hold out at least two pairs.")
    queries = encode_queries(encoder, [p[0] for p in clean], cancel=cancel)
    passages = encoder.encode([p[1] for p in clean] + [p[0] for p in clean], cancel=cancel)
    to_pos, to_orig = queries @ passages[:n].T, queries @ passages[n:].T
    own = np.diag(to_pos).copy()
    top1_positives = float(np.mean(to_pos.argmax(1) == np.arange(n)))
    others = to_pos.copy()
    np.fill_diagonal(others, -np.inf)
    top1 = float(np.mean(own > np.maximum(others.max(1), to_orig.max(1))))
    opposite = None
    if all(p[2] is not None for p in clean):
        labels = np.array([p[2] for p in clean], dtype=object)
        np.fill_diagonal(to_orig, -np.inf)
        # candidates j != i: the original of pair j (label_j) and its counterfactual (a label other than
        # label_j: surely other than the query's when label_j is the query's label)
        j_pos, j_orig = others.argmax(1), to_orig.argmax(1)
        hits = [labels[j_pos[i]] == labels[i] if others[i, j_pos[i]] > to_orig[i, j_orig[i]]
                else labels[j_orig[i]] != labels[i] for i in range(n)]
        opposite = float(np.mean(hits))
    return RetrieverScores(n, top1, top1_positives, opposite)


def evaluate_top1(encoder: Encoder, pairs: Sequence[Sequence[Any]]) -> float:
    """Fraction of held-out queries whose own counterfactual is the nearest held-out text (:attr:`RetrieverScores.top1`)."""
    return evaluate_retriever(encoder, pairs).top1
