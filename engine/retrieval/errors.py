"""Named errors of the corpus, the embedding index and counterfactual retrieval (codes CB950-CB969)."""

from __future__ import annotations

from engine.errors import CounterbiasError

__all__ = [
    "CorpusEmptyError",
    "CorpusError",
    "CorpusNameError",
    "CorpusNotFoundError",
    "CorpusSourceError",
    "EncoderError",
    "FaissUnavailableError",
    "IndexKindError",
    "IndexNotBuiltError",
    "IndexSettingsError",
    "LabelSpaceError",
    "NotLabelledError",
    "PairsSourceError",
    "RetrievalError",
    "RetrieverNotFoundError",
    "TooFewPairsError",
]


class RetrievalError(CounterbiasError):
    """Retrieval cannot run as asked."""

    code = "CB950"


class CorpusError(RetrievalError):
    """A corpus cannot be imported or used."""

    code = "CB951"


class CorpusNotFoundError(CorpusError):
    """No corpus of that name in the project."""

    code = "CB952"


class CorpusNameError(CorpusError):
    """The corpus name is empty or unusable."""

    code = "CB953"


class CorpusSourceError(CorpusError):
    """The file to import has no usable text column (or an unknown format)."""

    code = "CB954"


class CorpusEmptyError(CorpusError):
    """The corpus holds no sentences (nothing to label, embed or search)."""

    code = "CB955"


class NotLabelledError(RetrievalError):
    """The corpus has not been labelled (completely) by the member asked for."""

    code = "CB956"


class LabelSpaceError(RetrievalError):
    """A query's label is not one of the labelling member's labels."""

    code = "CB957"


class EncoderError(RetrievalError):
    """No sentence encoder of that name, or it cannot be loaded."""

    code = "CB958"


class IndexKindError(RetrievalError):
    """No index kind of that name."""

    code = "CB959"


class IndexSettingsError(RetrievalError):
    """Index settings that cannot work (nlist larger than the corpus, nprobe < 1, ...)."""

    code = "CB960"


class IndexNotBuiltError(RetrievalError):
    """The embeddings or the index of the corpus are missing or out of date."""

    code = "CB961"


class FaissUnavailableError(RetrievalError):
    """The faiss-cpu package is not installed."""

    code = "CB962"


class PairsSourceError(RetrievalError):
    """The seed pairs for a counterfactual retriever cannot be read (missing file, unknown columns)."""

    code = "CB963"


class TooFewPairsError(RetrievalError):
    """Too few seed pairs (or settings) to train or evaluate a counterfactual retriever."""

    code = "CB964"


class RetrieverNotFoundError(RetrievalError):
    """No trained retriever of that name in the project (or the name is unusable)."""

    code = "CB965"
