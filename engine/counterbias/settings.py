"""Settings of counterbias generation (declared in :mod:`engine.generate_settings`, re-exported here), and which
target labels an example gets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.generate_settings import (
    MODES,
    OPTIONS,
    GenerateSettings,
    GenerationConfigError,
    Option,
    inactive_options,
    option,
)

__all__ = ["MODES", "OPTIONS", "GenerateSettings", "GenerationConfigError", "Option", "candidate_fields",
           "edited_field", "inactive_options", "option", "targets_for"]


def edited_field(task: str) -> str:
    """The field a one-field edit (guided, pattern-keeping) changes: ``text``, or a pair's ``hypothesis``.

    The premise of a pair stays as written: it is the context the new hypothesis relates to.
    """
    return "hypothesis" if task == "pair" else "text"


def candidate_fields(edited: str, new: str | None, example: Mapping[str, Any]) -> tuple[str | None, ...]:
    """``(text, premise, hypothesis)`` of a candidate whose field ``edited`` became ``new``.

    A pair candidate keeps the original premise beside its new hypothesis (``None`` hypothesis
    for a failed one); a single-text candidate has only ``text``.

    Examples
    --------
    >>> candidate_fields("text", "A dull film.", {"text": "A fine film."})
    ('A dull film.', None, None)
    >>> candidate_fields("hypothesis", "Nobody sings.", {"premise": "A girl sings.", "hypothesis": "A girl sings."})
    (None, 'A girl sings.', 'Nobody sings.')
    """
    if edited == "text":
        return new, None, None
    return None, example.get("premise"), new


def targets_for(label: str, labels: Sequence[str], targets: str) -> list[str]:
    """Target labels for an example with gold ``label``.

    Raises
    ------
    GenerationConfigError
        A named target is not one of the dataset's labels.
    """
    others = [lab for lab in labels if lab != label]
    if targets in ("other", "each"):
        return others
    wanted = [t.strip() for t in targets.split(",") if t.strip()]
    unknown = [t for t in wanted if t not in labels]
    if unknown:
        raise GenerationConfigError(f"Target label(s) {unknown} are not in the dataset's labels {list(labels)}.",
                                    "Use 'other', 'each', or some of the dataset's labels.")
    return [t for t in wanted if t != label]
