"""The classifiers a downstream evaluation can train, registered by name.

``tfidf-lr`` (TF-IDF + logistic regression; fast, a sensitive probe) and ``backbone`` (any
ensemble backbone fine-tuned by :func:`engine.models.train.train_member`, written
``backbone:<backbone name>`` on the command line). A classifier is built from its name and JSON
parameters; :meth:`Classifier.fit` returns a fitted model that labels texts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from engine.evaluation.errors import ClassifierError
from engine.registry import Registry

if TYPE_CHECKING:
    from engine.evaluation.conditions import TrainingRows
    from engine.progress import CancelToken, ProgressFn
    from engine.store import Project

__all__ = ["CLASSIFIERS", "Classifier", "Fitted", "classifier_key", "make_classifier"]


class Fitted(Protocol):
    """A trained classifier."""

    def predict(self, texts: Sequence[tuple[str, ...]]) -> list[str]:
        """Label names for inputs (one tuple of field texts each)."""
        ...


class Classifier(Protocol):
    """A classifier kind with its parameters (``__init__`` stores parameters only)."""

    #: Display name, e.g. ``"tfidf-lr"`` or ``"backbone:minilm-l6"``.
    label: str

    def params(self) -> dict[str, Any]:
        """JSON parameters that, with the name, identify what is trained."""
        ...

    def fit(self, project: Project, rows: TrainingRows, seed: int, *, tag: str,
            progress: ProgressFn, cancel: CancelToken) -> Fitted:
        """Train on ``rows`` with ``seed``; ``tag`` names stored artefacts (condition key)."""
        ...


#: Classifier factories by name.
CLASSIFIERS: Registry[Any] = Registry(
    "classifier",
    ClassifierError,
    builtins={
        "tfidf-lr": "engine.evaluation.tfidf_lr:TfidfLogReg",
        "backbone": "engine.evaluation.backbone_classifier:BackboneClassifier",
    },
)


def make_classifier(spec: str, **params: Any) -> Classifier:
    """A classifier from ``name`` or ``backbone:<backbone>`` and keyword parameters.

    Examples
    --------
    >>> make_classifier("tfidf-lr").label
    'tfidf-lr'

    Raises
    ------
    ClassifierError
        Unknown name or parameters.
    """
    name, colon, arg = spec.partition(":")
    if colon:
        if name != "backbone" or not arg:
            raise ClassifierError(f"Cannot read the classifier {spec!r}.",
                                  "Write tfidf-lr or backbone:<backbone name>, e.g. backbone:minilm-l6.")
        params = {"backbone": arg, **params}
    factory = CLASSIFIERS.get(name)
    try:
        return factory(**params)
    except TypeError as exc:
        raise ClassifierError(f"Bad options for classifier {spec!r}: {exc}.", "Check the option names.") from exc


def classifier_key(classifier: Classifier) -> str:
    """Identity of a classifier's name and parameters (16 hex digits)."""
    raw = json.dumps([classifier.label, classifier.params()], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]
