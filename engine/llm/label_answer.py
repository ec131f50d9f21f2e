"""Reading an LLM's answer as one label name (the LLM judge, the sentence reader).

The answer is untrusted data: it counts only when, stripped of an ``Answer:``/``Label:`` prefix,
quotes, markdown emphasis and a final full stop, its first line is exactly one of the allowed
names (case-insensitive).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["ask_again", "parse_label"]

_PREFIX = re.compile(r"^\s*(?:the\s+)?(?:answer|label|sentiment|class|prediction)\s*(?:is)?\s*[:=-]?\s*", re.IGNORECASE)
_QUOTES = "\"'`*\u201c\u201d\u2018\u2019"


def parse_label(answer: str, labels: Sequence[str]) -> str | None:
    """The label an answer names, or ``None`` when it is not exactly one label.

    Examples
    --------
    >>> parse_label("Answer: **Positive**.", ["Negative", "Positive"])
    'Positive'
    >>> parse_label("positive", ["Negative", "Positive"])
    'Positive'
    >>> parse_label("Positive, mostly, but also negative", ["Negative", "Positive"]) is None
    True
    >>> parse_label("I think it is Negative", ["Negative", "Positive"]) is None
    True
    """
    lines = [line.strip() for line in (answer or "").strip().splitlines() if line.strip()]
    if not lines:
        return None
    text = _PREFIX.sub("", lines[0]).strip().strip(_QUOTES).rstrip(".!").strip().strip(_QUOTES).strip()
    by_name = {label.lower(): label for label in labels}
    return by_name.get(text.lower())


def ask_again(messages: list[dict[str, str]], answer: str, names: Sequence[str]) -> list[dict[str, str]]:
    """The conversation once more, with the unusable ``answer`` and a reminder to answer with one of ``names``."""
    return [*messages, {"role": "assistant", "content": answer[:500]},
            {"role": "user", "content": "Answer with exactly one of these words and nothing else: "
                                        + ", ".join(names) + "."}]
