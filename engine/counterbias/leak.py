"""Prompt-leak check: a candidate must not repeat text from the prompts' own few-shot examples.

Small models copy the examples of a few-shot prompt into their answers ("The acting is
wooden" turning up in an unrelated review). :class:`LeakGuard` collects the example
messages of prompts (every message but the system message and the last user message, which
holds the real input) and finds in a candidate

* a whole sentence of an example (of at least :data:`MIN_SENTENCE_WORDS` words), or
* any run of :data:`NGRAM` words of an example,

that the original text does not contain itself (a review may well say "the plot is thin").
Words are compared lower-cased, punctuation ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from engine.llm.prompts import Prompt, load_prompt
from engine.text.distance import words

__all__ = ["LEAK_SOURCES", "MIN_SENTENCE_WORDS", "NGRAM", "LeakGuard"]

#: Prompts whose few-shot examples a candidate must not repeat, per generation mode.
LEAK_SOURCES = {"edit": ("edit_sentence", "edit_sentence_strong", "opposite_phrase", "triples"),
                "reconstruct": ("rewrite", "reconstruct", "triples"), "core": ("guided_edit", "guided_edit_pair"),
                "llm": ("guided_edit", "guided_edit_pair"), "vt": ("vt_edit", "vt_edit_pair")}

#: Length of the word runs compared (6 words, as the issue asks).
NGRAM = 6
#: Shortest example sentence checked as a whole.
MIN_SENTENCE_WORDS = 3

_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_FIELD_LINE = re.compile(r"^[A-Z][\w ,()]{0,40}:\s*")


def _grams(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def _contains(tokens: list[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return any(tuple(tokens[i : i + n]) == phrase for i in range(len(tokens) - n + 1))


@dataclass(frozen=True)
class LeakGuard:
    """Phrases of few-shot examples that must not appear in candidates."""

    sentences: frozenset[tuple[str, ...]]
    ngrams: frozenset[tuple[str, ...]]

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> LeakGuard:
        """From example texts (lines such as ``Sentence: …`` lose their ``Sentence:`` label)."""
        sentences: set[tuple[str, ...]] = set()
        ngrams: set[tuple[str, ...]] = set()
        for text in texts:
            for piece in _SPLIT.split(text):
                piece = _FIELD_LINE.sub("", piece.strip())
                tokens = words(piece.replace("|", " "))
                if len(tokens) >= MIN_SENTENCE_WORDS:
                    sentences.add(tuple(tokens))
                ngrams |= _grams(tokens, NGRAM)
        return cls(frozenset(sentences), frozenset(ngrams))

    def widened(self, texts: Iterable[str]) -> LeakGuard:
        """This guard and the phrases of ``texts`` (e.g. the demonstrations a request was shown)."""
        more = LeakGuard.from_texts(texts)
        return LeakGuard(self.sentences | more.sentences, self.ngrams | more.ngrams)

    @classmethod
    def from_prompts(cls, prompts: Iterable[Prompt | str]) -> LeakGuard:
        """From the example messages of prompts (names or parsed prompts)."""
        texts: list[str] = []
        for prompt in prompts:
            parsed = load_prompt(prompt) if isinstance(prompt, str) else prompt
            messages = list(parsed.messages)
            last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
            texts.extend(m["content"] for i, m in enumerate(messages) if m["role"] != "system" and i != last_user)
        return cls.from_texts(texts)

    def find(self, candidate: str, original: str = "") -> str | None:
        """The first example phrase in ``candidate`` that ``original`` does not contain, or ``None``."""
        tokens = words(candidate)
        if not tokens:
            return None
        own = words(original)
        own_grams = _grams(own, NGRAM)
        for sentence in sorted(self.sentences, key=len, reverse=True):
            if len(sentence) <= len(tokens) and _contains(tokens, sentence) and not _contains(own, sentence):
                return " ".join(sentence)
        for gram in sorted(_grams(tokens, NGRAM) & self.ngrams):
            if gram not in own_grams:
                return " ".join(gram)
        return None
