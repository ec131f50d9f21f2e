"""Which input column holds what: text (or premise + hypothesis), label, id, split."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from engine.errors import MappingError, MissingColumnError

#: Common column names, most specific first (compared case-insensitively).
CANDIDATES: dict[str, tuple[str, ...]] = {
    "premise": ("premise", "sentence1", "sent1", "text_a", "context"),
    "hypothesis": ("hypothesis", "sentence2", "sent2", "text_b", "claim"),
    "text": ("text", "sentence", "review", "content", "document", "comment", "tweet", "utterance", "body"),
    "label": ("label", "gold_label", "sentiment", "labels", "class", "target", "category", "polarity", "y"),
    "id": ("id", "example_id", "pair_id", "guid", "uid", "idx", "batch_id"),
    "split": ("split", "fold", "partition", "subset"),
}


@dataclass(frozen=True)
class ColumnMapping:
    """Input columns for each role; ``None`` means "not in the file".

    A mapping with both ``premise`` and ``hypothesis`` describes a pair task (NLI);
    otherwise ``text`` must be set (single-text task).
    """

    text: str | None = None
    premise: str | None = None
    hypothesis: str | None = None
    label: str | None = None
    id: str | None = None
    split: str | None = None

    @property
    def task(self) -> str:
        """``"pair"`` or ``"single"``."""
        return "pair" if self.premise and self.hypothesis else "single"

    @property
    def text_columns(self) -> dict[str, str]:
        """``{example field: input column}`` for the text fields."""
        if self.task == "pair":
            return {"premise": self.premise, "hypothesis": self.hypothesis}  # type: ignore[dict-item]
        return {"text": self.text}  # type: ignore[dict-item]

    def as_dict(self) -> dict[str, str | None]:
        return asdict(self)

    def validate(self, header: Sequence[str], file: str) -> None:
        """Check the mapping is complete and every mapped column exists in ``header``.

        Raises
        ------
        MappingError
            No text column, or only one of premise/hypothesis.
        MissingColumnError
            A mapped column is not in the file.
        """
        if bool(self.premise) != bool(self.hypothesis):
            raise MappingError(
                f"{file}: only one of premise/hypothesis is mapped.",
                "Map both the premise and the hypothesis columns for a pair task, or neither and map a text column.",
            )
        if self.task == "single" and not self.text:
            raise MappingError(
                f"{file}: no text column is mapped (columns: {', '.join(header)}).",
                "Choose the column holding the text (or premise and hypothesis for pairs).",
            )
        if not self.label:
            raise MappingError(
                f"{file}: no label column is mapped (columns: {', '.join(header)}).",
                "Choose the column holding the label.",
            )
        present = set(header)
        for role, column in self.as_dict().items():
            if role == "text" and self.task == "pair":
                continue
            if column and column not in present:
                raise MissingColumnError(
                    f"{file}: the {role} column {column!r} is not in the file; its columns are: "
                    f"{', '.join(repr(h) for h in header)}.",
                    "Pick one of the listed columns in the mapping, or check the delimiter and header row.",
                )


def detect_mapping(header: Sequence[str]) -> ColumnMapping:
    """Guess a mapping from common column names (``premise``/``sentence1``, ``label``/``gold_label``…).

    Examples
    --------
    >>> detect_mapping(["sentence1", "sentence2", "gold_label"]).task
    'pair'
    >>> detect_mapping(["Sentiment", "Text"]).label
    'Sentiment'
    """
    lower = {h.strip().lower(): h for h in header}
    found: dict[str, str | None] = {}
    used: set[str] = set()
    for role in ("premise", "hypothesis", "text", "label", "id", "split"):
        found[role] = None
        for name in CANDIDATES[role]:
            column = lower.get(name)
            if column is not None and column not in used:
                found[role] = column
                used.add(column)
                break
    if not (found["premise"] and found["hypothesis"]):
        for role in ("premise", "hypothesis"):
            if found[role]:
                used.discard(found[role])  # type: ignore[arg-type]
            found[role] = None
    return ColumnMapping(**found)
