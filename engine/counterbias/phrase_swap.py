"""Phrase swap: edit mode's last try for a sentence that still reads as its original label.

After its edit, the repair and a fresh try, a sentence can still speak for the original label: the
bundled 1.5B model, asked to rewrite a whole sentence toward the target, mostly swaps synonyms
("a waste of money" → "a waste of time", "stupid mishap" → "silly error", "annoyed me" → "really
bothered me") or drops a word it had to keep. For such a sentence whose opinion words were marked
(:mod:`~engine.counterbias.opinion_words`), the LLM is asked a much smaller question, once per marked
phrase (prompt ``opposite_phrase``, cached like every answer): which words, put where the phrase
stands, say the opposite? The answers replace the phrases in the sentence as it was written, and
every other byte of the sentence is kept — the spurious words included, by construction.

The answer is untrusted data (:func:`parse_replacement`): one line of at most
:data:`MAX_REPLACEMENT_WORDS` words (and not much longer than the phrase), not the phrase itself,
quotes and an ``Answer:`` prefix stripped; anything else is no replacement. The swapped sentence then
passes the same checks as any edit, and replaces what the sentence had only when the sentence reader
reads it more as the target (edit mode records it in the edit's ``swapped``).

Measured on the 42 sentences of 28 CAD dev reviews (seed 34) that still read as the original label after every
edit by the bundled 1.5B model and had marked opinion words: 16 read as the target after the swap ("a waste of
money" → "a great investment", "obvious nonsense … was ridiculous" → "a clever twist … was funny", "was a success"
→ "was a failure"). The small model also swaps facts when the marking named them ("a horse" → "a camel"): such a
swap seldom reads as the target and is kept out, but the seams it leaves are not always fluent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from engine.counterbias.opinion_words import phrase_span
from engine.counterbias.sentence_reading import LLMAsker

if TYPE_CHECKING:
    from engine.llm.cache import CachedClient
    from engine.progress import CancelToken

__all__ = ["MAX_REPLACEMENT_WORDS", "PhraseSwapper", "parse_replacement", "swap_phrases"]

#: Request parameters: greedy, a few words.
SWAP_PARAMS = {"temperature": 0.0, "max_tokens": 24, "seed": 0}
#: A replacement longer than this (or than twice the phrase and four words more) is no replacement.
MAX_REPLACEMENT_WORDS = 10

_PREFIX = re.compile(r"^\s*(?:answer|replacement|new words|phrase)\s*[:=-]\s*", re.IGNORECASE)
_QUOTES = "\"'`*\u201c\u201d\u2018\u2019"


def parse_replacement(answer: str, phrase: str) -> str | None:
    """The words an answer puts in place of ``phrase``, or ``None`` when it holds no usable replacement.

    Examples
    --------
    >>> parse_replacement('"worth every penny"', "a waste of money")
    'worth every penny'
    >>> parse_replacement("Answer: delighted me.", "annoyed me")
    'delighted me'
    >>> parse_replacement("annoyed me", "annoyed me") is None
    True
    >>> parse_replacement("The film was a joy from start to finish and I loved it", "dull") is None
    True
    """
    lines = [line.strip() for line in (answer or "").strip().splitlines() if line.strip()]
    if not lines:
        return None
    new = _PREFIX.sub("", lines[0]).strip().strip(_QUOTES).strip()
    if not phrase.rstrip().endswith((".", "!", "?")):
        new = new.rstrip(".!?;:,").strip(_QUOTES).strip()
    words = new.split()
    if not words or len(words) > min(MAX_REPLACEMENT_WORDS, 2 * len(phrase.split()) + 4):
        return None
    if " ".join(words).lower() == " ".join(phrase.split()).lower():
        return None
    return " ".join(words)


#: Words that open a noun phrase: a replacement that brings its own article after one of them drops that article
#: ("this crap" → "this masterpiece", not "this a masterpiece").
_DETERMINERS = {"this", "that", "these", "those", "my", "your", "his", "her", "its", "our", "their", "no", "any",
                "some", "every", "each"}


def swap_phrases(sentence: str, replacements: Mapping[str, str]) -> str:
    """``sentence`` with each phrase (whole words, case and spacing ignored, its first occurrence) replaced.

    The seams are mended: a capital at the sentence's start is kept; a word the replacement repeats from just before
    the phrase is not doubled ("was all trash" → "was full of ideas", not "was was full …"); an article before a
    replacement agrees with it ("a" / "an"), or goes when the replacement brings its own ("a waste of money" → "a
    great investment", not "a a great …"); after another determiner the replacement's article goes ("this crap" →
    "this masterpiece").

    Examples
    --------
    >>> swap_phrases("Stupid mishaps pile up, a awful mess.", {"stupid mishaps": "clever twists", "awful": "awesome"})
    'Clever twists pile up, an awesome mess.'
    >>> swap_phrases("It was an ugly, dull film.", {"ugly": "lovely"})
    'It was a lovely, dull film.'
    >>> swap_phrases("It's not only a waste of money.", {"waste of money": "a great investment"})
    "It's not only a great investment."
    >>> swap_phrases("The start was all trash.", {"all trash": "was full of fresh ideas"})
    'The start was full of fresh ideas.'
    >>> swap_phrases("How can you go to this crap?", {"crap": "a masterpiece"})
    'How can you go to this masterpiece?'
    """
    out = sentence
    for phrase, new in replacements.items():
        span = phrase_span(out, phrase)
        if span is None or not new:
            continue
        start = out.lower().find(span.lower())
        if start < 0:
            continue
        before = out[:start]
        last = re.search(r"(?<!\w)(\w+)(\s+)$", before)
        first = new.split()[0]
        if last and first.lower() == last.group(1).lower():
            before = before[: last.start(1)]  # the replacement repeats the word before it
            last = re.search(r"(?<!\w)(\w+)(\s+)$", before)
        starts_article = re.match(r"(?:a|an|the)\s", new, flags=re.IGNORECASE) is not None
        if last and last.group(1).lower() in ("a", "an", "the"):
            if starts_article:
                if last.group(1)[:1].isupper():
                    new = new[:1].upper() + new[1:]
                before = before[: last.start(1)]
            elif last.group(1).lower() in ("a", "an"):
                word = last.group(1)
                fixed = word[0] + "n" if new[:1].lower() in "aeiou" else word[0]
                before = before[: last.start(1)] + fixed + last.group(2)
        elif last and last.group(1).lower() in _DETERMINERS and starts_article:
            new = new.split(None, 1)[1] if len(new.split()) > 1 else new
        if not before.strip() and span[:1].isupper():
            new = new[:1].upper() + new[1:]
        out = before + new + out[start + len(span):]
    return out


class PhraseSwapper(LLMAsker):
    """Asks the LLM for the opposite of a phrase in its sentence (see the module doc); answers are cached per
    request like every answer. Parameters as :class:`~engine.counterbias.sentence_reading.LLMAsker`."""

    prompt_name = "opposite_phrase"

    def __init__(self, client: CachedClient, labels: Sequence[str], task: str, cancel: CancelToken | None = None):
        super().__init__(client, labels, task, cancel)
        #: ``(sentence, phrase, label, target) -> Failure`` of requests that failed in transport.
        self.failed: dict[tuple[str, str, str, str], Any] = {}

    def swap(self, items: Sequence[tuple[str, str, str, str]]) -> list[str | None]:
        """For each ``(sentence, phrase, label it speaks for, target label)``: the words to put in the phrase's
        place, or ``None`` (an unusable answer or a failed request)."""
        from engine.llm.base import ChatRequest, ChatResult

        todo = list(dict.fromkeys(items))
        found: dict[tuple[str, str, str, str], str | None] = {}
        if todo:
            requests = [ChatRequest(self._prompt.render(task=self.task, labels=", ".join(self.labels), label=label,
                                                        target=target, sentence=sentence, phrase=phrase),
                                    dict(SWAP_PARAMS))
                        for sentence, phrase, label, target in todo]
            answers = self.client.chat_many(requests, cancel=self.cancel).results
            for item, answer in zip(todo, answers, strict=True):
                if isinstance(answer, ChatResult):
                    found[item] = parse_replacement(answer.text, item[1])
                else:
                    self.failed[item] = answer
                    found[item] = None
        return [found.get(i) for i in items]
