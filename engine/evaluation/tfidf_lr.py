"""TF-IDF features and a logistic regression (scikit-learn): the quick downstream probe."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.evaluation.classifiers import CLASSIFIERS

if TYPE_CHECKING:
    from engine.evaluation.conditions import TrainingRows
    from engine.progress import CancelToken, ProgressFn
    from engine.store import Project

__all__ = ["TfidfLogReg"]

#: Joins the premise and hypothesis of a pair (a token TF-IDF never sees inside a text).
PAIR_JOIN = " ||| "


class _FittedPipeline:
    def __init__(self, pipeline: Any) -> None:
        self.pipeline_ = pipeline

    def predict(self, texts: Sequence[tuple[str, ...]]) -> list[str]:
        return [str(x) for x in self.pipeline_.predict([PAIR_JOIN.join(t) for t in texts])]


@CLASSIFIERS.register("tfidf-lr")
class TfidfLogReg:
    """TF-IDF (word 1-2-grams, sublinear tf) + L2 logistic regression.

    Parameters
    ----------
    ngram_max
        Longest word n-gram.
    min_df
        Minimum document frequency of a term.
    c
        Inverse regularisation strength.
    max_features
        Vocabulary cap (``None``: no cap).

    Notes
    -----
    The fit is deterministic given its rows (lbfgs): seeds differ only where a condition samples
    rows (a source with a limit).
    """

    label = "tfidf-lr"

    def __init__(self, ngram_max: int = 2, min_df: int = 1, c: float = 1.0, max_features: int | None = 200_000) -> None:
        self.ngram_max = ngram_max
        self.min_df = min_df
        self.c = c
        self.max_features = max_features

    def params(self) -> dict[str, Any]:
        return {"ngram_max": self.ngram_max, "min_df": self.min_df, "c": self.c, "max_features": self.max_features}

    def fit(self, project: Project, rows: TrainingRows, seed: int, *, tag: str,
            progress: ProgressFn, cancel: CancelToken) -> _FittedPipeline:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        cancel.raise_if_cancelled()
        progress(0.0, f"tfidf-lr: fitting on {len(rows.texts):,} rows")
        pipeline = make_pipeline(
            TfidfVectorizer(ngram_range=(1, self.ngram_max), min_df=self.min_df, sublinear_tf=True,
                            max_features=self.max_features),
            LogisticRegression(C=self.c, max_iter=2000, random_state=seed),
        )
        pipeline.fit([PAIR_JOIN.join(t) for t in rows.texts], list(rows.labels))
        progress(1.0, "tfidf-lr: fitted")
        return _FittedPipeline(pipeline)
