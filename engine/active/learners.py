"""Learners the simulation retrains at each budget, registered by name.

``embed-lr`` (default): logistic regression on MiniLM-L6 sentence embeddings. Each distinct text
is embedded once per run (an in-memory cache, optionally kept in an ``.npz`` file so a rerun
embeds nothing); a pair is the concatenation ``[p, h, |p - h|, p * h]`` of its two embeddings.
``tfidf-lr``: TF-IDF word 1-2-grams + logistic regression, refitted on the selected texts only.

A learner is built from its name and keyword parameters; :meth:`prepare` embeds ahead (the
pool and the test split), :meth:`fit` trains on ``(texts, labels)`` and returns a model whose
``predict`` labels texts. A text is a tuple of field texts (one field, or premise and hypothesis).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from engine.active.errors import UnknownLearnerError
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.registry import Registry

__all__ = ["LEARNERS", "EmbedLogReg", "Learner", "Model", "TfidfLearner", "learner_key", "make_learner"]

Text = tuple[str, ...]


class Model(Protocol):
    """A trained learner."""

    def predict(self, texts: Sequence[Text]) -> list[str]:
        """Label names for texts."""
        ...


class Learner(Protocol):
    """A learner kind with its parameters."""

    #: Registry name, e.g. ``"embed-lr"``.
    label: str

    def params(self) -> dict[str, Any]:
        """JSON parameters that, with the name, identify what is trained."""
        ...

    def prepare(self, texts: Sequence[Text], *, progress: ProgressFn = no_progress,
                cancel: CancelToken | None = None) -> None:
        """Compute features of texts ahead of training (may do nothing)."""
        ...

    def fit(self, texts: Sequence[Text], labels: Sequence[str], seed: int) -> Model:
        """Train on labelled texts."""
        ...


#: Learner factories by name.
LEARNERS: Registry[Any] = Registry(
    "learner",
    UnknownLearnerError,
    builtins={"embed-lr": "engine.active.learners:EmbedLogReg", "tfidf-lr": "engine.active.learners:TfidfLearner"},
)


def make_learner(name: str, **params: Any) -> Learner:
    """A learner from its registry name and keyword parameters.

    Raises
    ------
    UnknownLearnerError
        Unknown name or parameters.

    Examples
    --------
    >>> make_learner("tfidf-lr").label
    'tfidf-lr'
    """
    factory = LEARNERS.get(name)
    try:
        return factory(**params)
    except TypeError as exc:
        raise UnknownLearnerError(f"Bad options for learner {name!r}: {exc}.", "Check the option names.") from exc


def learner_key(learner: Learner) -> str:
    """Identity of a learner's name and parameters (16 hex digits)."""
    raw = json.dumps([learner.label, learner.params()], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


class _Constant:
    """The model of a training set holding one label: it always answers that label."""

    def __init__(self, label: str) -> None:
        self.label = label

    def predict(self, texts: Sequence[Text]) -> list[str]:
        return [self.label] * len(texts)


class _EmbedModel:
    def __init__(self, learner: EmbedLogReg, clf: Any) -> None:
        self.learner, self.clf = learner, clf

    def predict(self, texts: Sequence[Text]) -> list[str]:
        if not len(texts):
            return []
        return [str(x) for x in self.clf.predict(self.learner.features(texts))]


class EmbedLogReg:
    """L2 logistic regression on L2-normalised MiniLM-L6 sentence embeddings.

    Parameters
    ----------
    c
        Inverse regularisation strength (few shots: a weak penalty, default 10).
    class_weight
        ``"balanced"`` (default) or ``None``.
    cache
        An ``.npz`` file keeping the embeddings between runs (``None``: in memory only).
    """

    label = "embed-lr"

    def __init__(self, c: float = 10.0, class_weight: str | None = "balanced", cache: str | Path | None = None) -> None:
        self.c = float(c)
        self.class_weight = class_weight
        self.cache = Path(cache) if cache else None
        self._vectors: dict[str, np.ndarray] = {}
        self._loaded = False

    def params(self) -> dict[str, Any]:
        return {"c": self.c, "class_weight": self.class_weight, "encoder": "all-MiniLM-L6-v2"}

    # ------------------------------------------------------------------ embeddings
    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self.cache is not None and self.cache.is_file():
            with np.load(self.cache) as data:
                for k, v in zip(data["keys"], data["vectors"], strict=True):
                    self._vectors.setdefault(str(k), v)

    def _save(self) -> None:
        if self.cache is None or not self._vectors:
            return
        self.cache.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._vectors), dtype="U40")
        tmp = self.cache.with_name(self.cache.name + ".tmp.npz")
        np.savez(tmp, keys=keys, vectors=np.stack(list(self._vectors.values())))
        tmp.replace(self.cache)

    def embed(self, texts: Sequence[str], *, progress: ProgressFn = no_progress,
              cancel: CancelToken | None = None) -> int:
        """Embed the texts not embedded yet (each distinct text once); return how many were embedded."""
        from engine.evaluation.embeddings import embed_texts

        self._load()
        missing = list(dict.fromkeys(t for t in texts if self._key(t) not in self._vectors))
        if missing:
            vectors = embed_texts(missing, progress=progress, cancel=ensure_token(cancel))
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.where(norms > 0, norms, 1.0)
            for t, v in zip(missing, vectors, strict=True):
                self._vectors[self._key(t)] = v
            self._save()
        progress(1.0, f"embed-lr: {len(missing):,} texts embedded")
        return len(missing)

    def features(self, texts: Sequence[Text]) -> np.ndarray:
        """The feature matrix of texts (embedding any text not cached yet)."""
        self.embed([f for t in texts for f in t])
        rows = []
        for t in texts:
            vs = [self._vectors[self._key(f)] for f in t]
            if len(vs) == 2:
                p, h = vs
                rows.append(np.concatenate([p, h, np.abs(p - h), p * h]))
            else:
                rows.append(np.concatenate(vs))
        return np.vstack(rows).astype(np.float32)

    def prepare(self, texts: Sequence[Text], *, progress: ProgressFn = no_progress,
                cancel: CancelToken | None = None) -> None:
        self.embed([f for t in texts for f in t], progress=progress, cancel=cancel)

    def fit(self, texts: Sequence[Text], labels: Sequence[str], seed: int) -> Model:
        from sklearn.linear_model import LogisticRegression

        if len(set(labels)) < 2:
            return _Constant(str(labels[0]))
        clf = LogisticRegression(C=self.c, class_weight=self.class_weight, max_iter=2000, random_state=seed)
        clf.fit(self.features(texts), list(labels))
        return _EmbedModel(self, clf)


class _TfidfModel:
    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline

    def predict(self, texts: Sequence[Text]) -> list[str]:
        from engine.evaluation.tfidf_lr import PAIR_JOIN

        return [str(x) for x in self.pipeline.predict([PAIR_JOIN.join(t) for t in texts])] if len(texts) else []


class TfidfLearner:
    """TF-IDF (word 1-2-grams, sublinear tf) + L2 logistic regression, as the evaluation's ``tfidf-lr``.

    Parameters
    ----------
    c
        Inverse regularisation strength.
    ngram_max
        Longest word n-gram.
    class_weight
        ``"balanced"`` (default) or ``None``.
    """

    label = "tfidf-lr"

    def __init__(self, c: float = 10.0, ngram_max: int = 2, class_weight: str | None = "balanced") -> None:
        self.c, self.ngram_max, self.class_weight = float(c), int(ngram_max), class_weight

    def params(self) -> dict[str, Any]:
        return {"c": self.c, "ngram_max": self.ngram_max, "class_weight": self.class_weight}

    def prepare(self, texts: Sequence[Text], *, progress: ProgressFn = no_progress,
                cancel: CancelToken | None = None) -> None:
        progress(1.0, "tfidf-lr: nothing to prepare")

    def fit(self, texts: Sequence[Text], labels: Sequence[str], seed: int) -> Model:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        from engine.evaluation.tfidf_lr import PAIR_JOIN

        if len(set(labels)) < 2:
            return _Constant(str(labels[0]))
        pipeline = make_pipeline(
            TfidfVectorizer(ngram_range=(1, self.ngram_max), sublinear_tf=True),
            LogisticRegression(C=self.c, class_weight=self.class_weight, max_iter=2000, random_state=seed),
        )
        pipeline.fit([PAIR_JOIN.join(t) for t in texts], list(labels))
        return _TfidfModel(pipeline)

