"""Opinion words of edit mode: which words of a sentence make it speak for its label?

Edit mode names, for each sentence it rewrites, the words to change and the words to keep. The
words to change come from the ensemble's principal words, and those are often not what makes a
sentence speak for its label: on 20 CAD reviews of ordinary length (stop 34), the sentences still
read as the original label after every edit had been told to change "movie", "could", "see",
"take" or "minutes", while the words that carried the opinion ("annoyed", "flat", "obvious",
"heavy handed") were on the list of spurious words to keep verbatim — the small model could only
swap synonyms, or dropped the word and the edit was refused.

For a sentence the sentence reader reads as the original label, the generating LLM is asked once
(prompt ``opinion_words``, cached like every answer) which words make it do so. Only phrases
found verbatim in the sentence count (the answer is untrusted data); they are named to change,
and a spurious word inside one is *released*: the edit may change it, the candidate records it
(``meta.fields[].edits[].released``), and the spurious-word check does not hold its absence
against the candidate. An answer with no usable phrase is no verdict: the sentence is planned as
before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.counterbias.sentence_reading import LLMAsker

if TYPE_CHECKING:
    from engine.llm.cache import CachedClient
    from engine.progress import CancelToken

__all__ = ["MAX_PHRASE_WORDS", "OpinionFinder", "parse_opinion_words", "phrase_span"]

#: Request parameters: greedy, a few short phrases.
FIND_PARAMS = {"temperature": 0.0, "max_tokens": 32, "seed": 0}
#: A phrase longer than this is no marking (the model copied the sentence).
MAX_PHRASE_WORDS = 8
#: At most this many phrases are kept per sentence.
MAX_PHRASES = 4

_PREFIX = re.compile(r"^\s*(?:answer|words|opinion words)\s*[:=-]\s*", re.IGNORECASE)
_STRIP = "\"'`*\u201c\u201d\u2018\u2019.!?;:()[] \t"


def phrase_span(sentence: str, phrase: str) -> str | None:
    """``phrase`` as written in ``sentence`` (case and spacing ignored, whole words only), or ``None``."""
    parts = phrase.split()
    if not parts:
        return None
    pattern = r"(?<!\w)" + r"\s+".join(re.escape(p) for p in parts) + r"(?!\w)"
    found = re.search(pattern, sentence, flags=re.IGNORECASE)
    return found.group(0) if found else None


def parse_opinion_words(answer: str, sentence: str, none: str = "none") -> list[str] | None:
    """The phrases of ``sentence`` an answer marks (as written in the sentence), ``[]`` for none, ``None`` when
    the answer marks nothing usable (no verdict).

    Examples
    --------
    >>> parse_opinion_words("acting is flat, lacks any direction", "The acting is flat and it lacks any direction.")
    ['acting is flat', 'lacks any direction']
    >>> parse_opinion_words("none", "Two brothers inherit a lighthouse.")
    []
    >>> parse_opinion_words("Annoyed, annoyed, boring", "The flute annoyed me.")
    ['annoyed']
    >>> parse_opinion_words("The film is a dull mess", "A lovely film.") is None
    True
    """
    lines = [line.strip() for line in (answer or "").strip().splitlines() if line.strip()]
    if not lines:
        return None
    first = _PREFIX.sub("", lines[0]).strip().strip(_STRIP)
    if first.lower() == none.lower():
        return []
    found: list[str] = []
    for piece in re.split(r"[,;]", first):
        piece = piece.strip().strip(_STRIP)
        if not piece or len(piece.split()) > MAX_PHRASE_WORDS:
            continue
        span = phrase_span(sentence, piece)
        if span and span.lower() not in {f.lower() for f in found}:
            found.append(span)
    return found[:MAX_PHRASES] or None


class OpinionFinder(LLMAsker):
    """Asks the LLM which words of a sentence carry its label (see the module doc); answers are cached per sentence
    and label. Parameters as :class:`~engine.counterbias.sentence_reading.LLMAsker`."""

    prompt_name = "opinion_words"

    def __init__(self, client: CachedClient, labels: Sequence[str], task: str, cancel: CancelToken | None = None):
        super().__init__(client, labels, task, cancel)
        self._found: dict[tuple[str, str], list[str] | None] = {}
        #: ``(sentence, label) -> Failure`` of requests that failed in transport (not sent again by this finder).
        self.failed: dict[tuple[str, str], Any] = {}

    def find(self, items: Sequence[tuple[str, str]]) -> list[list[str] | None]:
        """For each ``(sentence, label it was read as)``: the phrases that carry that label, ``[]`` for none,
        ``None`` for no verdict (an unusable answer or a failed request)."""
        from engine.llm.base import ChatRequest, ChatResult

        todo = list(dict.fromkeys(i for i in items if i[0] and i not in self._found and i not in self.failed))
        if todo:
            requests = [ChatRequest(self._prompt.render(task=self.task, labels=", ".join(self.labels), none=self.none,
                                                        label=label, sentence=sentence), dict(FIND_PARAMS))
                        for sentence, label in todo]
            answers = self.client.chat_many(requests, cancel=self.cancel).results
            for item, answer in zip(todo, answers, strict=True):
                if isinstance(answer, ChatResult):
                    self._found[item] = parse_opinion_words(answer.text, item[0], self.none)
                else:
                    self.failed[item] = answer
        return [self._found.get(i) for i in items]

    def failure_for(self, sentences: Sequence[str]) -> Any:
        """The transport failure of the first of ``sentences`` whose marking failed, or ``None``."""
        mine = set(sentences)
        return next((f for (s, _), f in self.failed.items() if s in mine), None)
