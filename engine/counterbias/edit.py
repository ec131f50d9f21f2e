"""Edit-preserving counterbias, the pure part: which sentences to edit, checking and joining edits.

In edit mode a candidate is the original text with only the sentences that hold a principal
triple replaced; every other byte (other sentences, spaces, line breaks) is kept. Each edited
sentence is checked before it is used (:func:`check_sentence`): it must differ from the
sentence, stay about as long, contain the sentence's spurious and gendered words verbatim, and
repeat nothing of the prompts' few-shot examples (:class:`~engine.counterbias.leak.LeakGuard`).

Everything here works on plain strings: no I/O, no LLM.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.counterbias.leak import LeakGuard
from engine.counterbias.manipulate import lemma, word_keys
from engine.text import normalize, segment
from engine.text.distance import word_edit_distance
from engine.text.lexicon import coined_words
from engine.text.words import FUNCTION_WORDS, LEXICAL_KINDS
from engine.verification.heuristics import commentary, label_named, repetition

__all__ = [
    "FUNCTION_WORDS",
    "Check",
    "SentenceEdit",
    "assemble",
    "check_sentence",
    "clean_sentence",
    "fact_words",
    "has_word",
    "label_lean",
    "missing_words",
    "surface_words",
]


@dataclass
class SentenceEdit:
    """One sentence to rewrite, step by step (stored in the candidate's ``meta``)."""

    index: int
    original: str
    sentence: str
    change: list[str]
    keep: list[str]
    new: str | None = None
    raw: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    messages: list[dict[str, str]] = field(default_factory=list, repr=False)
    #: Why the sentence stayed as it was after its repair (``None``: edited, or not tried yet).
    failure: str | None = None
    #: The accepted edit as the LLM wrote it; ``new`` is it after the gender swap.
    answer: str | None = None
    #: The words the LLM marked as making the sentence read as the original label (``None``: not asked, or no
    #: verdict): named to change.
    opinion: list[str] | None = None
    #: Spurious words inside ``opinion``: the edit may change them (not in ``keep``).
    released: list[str] = field(default_factory=list)
    #: Spurious words inside ``opinion`` that a first try kept (candidates made before the hold stage was removed):
    #: copied, with the opinion turned around them; released only when that try failed.
    held: list[str] = field(default_factory=list)
    #: How the held words' try ended: ``"kept"`` (its edit is the sentence's), else why they were released.
    hold: str | None = None
    #: ``{marked phrase: its replacement}`` when the edit is a phrase swap (:mod:`engine.counterbias.phrase_swap`).
    swapped: dict[str, str] = field(default_factory=dict)
    #: The sentence is removed from the candidate (``new == ""``): it still read as the original label after every try
    #: and held no word to keep (``GenerateSettings.edit_remove``).
    removed: bool = False
    #: The demonstrations its requests were shown (:meth:`engine.generation.demos.Demo.to_dict`), in place of the
    #: prompt's invented examples.
    demos: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "original": self.original, "sentence": self.sentence, "change": self.change,
                "keep": self.keep, "new": self.new, "answer": self.answer, "raw": [r[:2000] for r in self.raw],
                "problems": self.problems,
                "failure": self.failure,
                **({"opinion": self.opinion} if self.opinion is not None else {}),
                **({"released": self.released} if self.released else {}),
                **({"held": self.held, "hold": self.hold} if self.held else {}),
                **({"swapped": self.swapped} if self.swapped else {}),
                **({"removed": True} if self.removed else {}),
                **({"demos": self.demos} if self.demos else {})}


@dataclass(frozen=True)
class Check:
    """Why an edited sentence cannot be used: ``reason`` (a short key) and ``message`` (for the LLM)."""

    reason: str
    message: str


def surface_words(sentence: str, words: Iterable[str]) -> list[str]:
    """The words of ``sentence`` (as written there) that match ``words`` by form or lemma, in order, once each.

    Examples
    --------
    >>> surface_words("Loved the cast, hated the cast's hats.", ["love", "cast"])
    ['Loved', 'cast']
    """
    keys = word_keys(words)
    found: dict[str, str] = {}
    for token in segment(sentence):
        if token.kind not in LEXICAL_KINDS:
            continue
        key = normalize(token.text)
        if key and {key, lemma(token.text)} & keys:
            found.setdefault(key, token.text)
    return list(found.values())


def has_word(text: str, word: str) -> bool:
    """Whether ``word`` occurs in ``text`` as a whole word (case-insensitive)."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, re.IGNORECASE) is not None


def missing_words(text: str, words: Iterable[str]) -> list[str]:
    """The words of ``words`` that ``text`` does not contain verbatim."""
    return [w for w in words if not has_word(text, w)]


_LABEL = re.compile(r"^\s*(?:edited sentence|new sentence|sentence to edit|sentence|answer|output|edit)\s*:\s*",
                    re.IGNORECASE)
_QUOTES = "\"'\u201c\u201d\u2018\u2019`"


def clean_sentence(answer: str, sentence: str = "") -> str:
    """The edited sentence in an answer: first non-empty line, without a ``Sentence:`` label or outer quotes.

    Outer quotes are kept when ``sentence`` (the one edited) itself starts or ends with one
    (``"Pulp Fiction" was robbed for "Best Picture."``).

    Examples
    --------
    >>> clean_sentence('Edited sentence: "A dull film."\\nI changed fine to dull.')
    'A dull film.'
    >>> clean_sentence('"Heat" was robbed.', '"Heat" was praised.')
    '"Heat" was robbed.'
    """
    lines = [line.strip() for line in (answer or "").strip().splitlines()
             if line.strip() and not line.strip().startswith("```")]
    text = _LABEL.sub("", lines[0]).strip() if lines else ""
    edited = sentence.strip()
    quoted = bool(edited) and (edited[0] in _QUOTES or edited[-1] in _QUOTES)
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES and not quoted:
        text = text[1:-1].strip()
    return text




#: Entity types whose words an edited sentence keeps verbatim: names, places, groups, titles, events.
FACT_ENTITIES = frozenset({"PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW",
                           "LANGUAGE"})
#: Entities whose numbers are facts ("30 dollars", "15 days", "two hours" has no digit to keep): an edit once
#: turned "15 worms in 15 days ... 30 dollars" into "15 worms in one day ... 10 dollars".
NUMBER_ENTITIES = frozenset({"DATE", "TIME", "CARDINAL", "MONEY", "QUANTITY", "PERCENT"})
#: A word with at least this |z| against a label is never a fact to keep: it carries the label (the recogniser
#: calls "Awesome Awesome Awesome!" an organisation, and a title such as "Amazing Grace" may be edited).
FACT_MAX_Z = 2.5


#: A span in double quotes, as a title is quoted ("Amazing Grace", “Roman Troy Moronie”).
_QUOTED = re.compile(r'"([^"\n]{1,80})"|“([^”\n]{1,80})”')


def quoted_titles(sentence: str) -> list[str]:
    """The words of the titles a sentence quotes: a span in double quotes of at most eight words, each capitalised
    (function words aside) — "Amazing Grace" names a film, whatever its words say of the label ("Amazing" ->
    "Disgusting" was seen). A quoted phrase in lower case ("good for members") is not a title.

    Examples
    --------
    >>> quoted_titles('"Amazing Grace" has a languid feel; it is "innovative" and not "Dull And Slow!"')
    ['Amazing', 'Grace']
    >>> quoted_titles('I watched “The Return of the King” twice.')
    ['Return', 'King']
    """
    out: list[str] = []
    for match in _QUOTED.finditer(sentence):
        words = segment(match.group(1) or match.group(2))
        lexical = [w for w in words if w.is_lexical]
        if not lexical or len(lexical) > 8 or any(not ch.isalnum() and ch not in " '-:,&." for ch in
                                                  (match.group(1) or match.group(2))):
            continue
        named = [w for w in lexical if w.key not in FUNCTION_WORDS]
        if named and all(w.text[:1].isupper() or w.text[:1].isdigit() for w in named):
            out.extend(w.text for w in named)
    return list(dict.fromkeys(out))


def fact_words(sentence: str, z: Mapping[str, float] | None = None) -> list[str]:
    """The words of a sentence's facts, as written: its named entities' words (:data:`FACT_ENTITIES`) and the
    numbers of its dates, amounts and counts (:data:`NUMBER_ENTITIES`), which an edit toward another label has no
    reason to change ("2005" -> "2004", "30 dollars" -> "10 dollars", "the Norrland region of Sweden" -> "the far
    north of Sweden" were seen); and the words of a quoted title (:func:`quoted_titles`), whatever their z. Only
    the quoted titles without spaCy's recogniser.

    ``z`` (word z-statistics against the text's label) leaves out words that carry a label (|z| >= :data:`FACT_MAX_Z`);
    function words are left out too, and so are the numbers of a rating ("10/10", which the recogniser may
    call a date): a rating is an opinion (:mod:`engine.text.ratings`).

    Examples
    --------
    >>> fact_words("Lee Pace (The White Countess) was great in 2005.")  # doctest: +SKIP
    ['Lee', 'Pace', 'White', 'Countess', '2005']
    """
    from engine.text.nlp import spacy_entities
    from engine.text.ratings import find_ratings

    titles = quoted_titles(sentence)
    found = spacy_entities(sentence)
    if not found:
        return titles
    z = z or {}
    rated = {w.text for r in find_ratings(sentence) for w in segment(r.text)}
    out: list[str] = list(titles)
    for label, text in found:
        if label in FACT_ENTITIES:
            words = [w for w in segment(text) if w.is_lexical]
        elif label in NUMBER_ENTITIES:
            words = [w for w in segment(text) if any(ch.isdigit() for ch in w.text)]
        else:
            continue
        out.extend(w.text for w in words
                   if w.key not in FUNCTION_WORDS and abs(z.get(w.key, 0.0)) < FACT_MAX_Z and w.text not in rated)
    return list(dict.fromkeys(out))


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


#: Words in a row that an edited sentence may not share with another sentence of the text (unless the
#: edited sentence had them): more is a copy of the context ("… or should i say the abundance of
#: Apparently talent was a factor when the casting director came to town").
COPIED_RUN = 6


def _ngrams(text: str, n: int = COPIED_RUN) -> set[tuple[str, ...]]:
    words = _norm(text).split()
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


#: Word-level edit distance above which an answer is a new sentence, not an edit (from 5 words on).
MAX_SENTENCE_DISTANCE = 0.8


#: How far (in summed word z) an edit may move a sentence *away* from its target label before it is refused.
MAX_WRONG_LEAN = 2.0


def label_lean(z_target: Mapping[str, float], min_z: float = 2.0) -> Callable[[str], float]:
    """How much a text leans to one label: the sum of its distinct words' z toward it (``|z| >= min_z`` only).

    Examples
    --------
    >>> lean = label_lean({"great": 5.0, "dull": -4.0, "film": 0.3})
    >>> lean("A great film."), lean("A dull, dull film.")
    (5.0, -4.0)
    """
    strong = {w: z for w, z in z_target.items() if abs(z) >= min_z}

    def lean(text: str) -> float:
        return float(sum(strong.get(k, 0.0) for k in {w.key for w in segment(text) if w.is_lexical}))

    lean.strong = strong  # type: ignore[attr-defined]
    return lean


def _wrong_words(new: str, sentence: str, strong: Mapping[str, float]) -> list[str]:
    """Words the edit added that go against the target, or removed that went with it."""
    a = {w.key: w.text for w in segment(sentence) if w.is_lexical}
    b = {w.key: w.text for w in segment(new) if w.is_lexical}
    added = [b[k] for k in b if k not in a and strong.get(k, 0.0) < 0]
    removed = [a[k] for k in a if k not in b and strong.get(k, 0.0) > 0]
    return added + removed


def check_sentence(new: str, sentence: str, keep: Sequence[str], *, guard: LeakGuard | None = None,
                   original_text: str = "", labels: Sequence[str] = (), others: Sequence[str] = (),
                   lean: Callable[[str], float] | None = None, target: str = "",
                   known: Collection[str] = ()) -> Check | None:
    """Why an edited sentence cannot be used, or ``None`` when it can.

    ``sentence`` is the sentence sent for editing, ``keep`` the words it must still contain,
    ``original_text`` the whole original (phrases of it never count as a leak), ``others`` the
    text's sentences (an answer that repeats another one of them, or is closer to another than
    to ``sentence``, edited the wrong sentence: small models copy the context), ``known`` the dataset's words,
    accepted besides the English word list when new words are looked up (a made-up word, "whitemailed", is refused).

    Examples
    --------
    >>> check_sentence("The cast is weak.", "The cast is strong.", ["cast"]) is None
    True
    >>> check_sentence("It is weak.", "The cast is strong.", ["cast"]).reason
    'missing words'
    >>> check_sentence("The cast is weak, a negative sentiment.", "The cast is strong.", ["cast"],
    ...                labels=["Negative", "Positive"]).reason
    'comment'
    >>> check_sentence("The cast is weak and very dull, the cast is weak and very dull.", "The cast is strong and lively.",
    ...                ["cast"]).reason
    'repeated'
    """
    if not new:
        return Check("empty", "The answer is empty.")
    if _norm(new) in {_norm(label) for label in labels}:
        return Check("label only", "The answer is only a label name, not a sentence.")
    comment = label_named(new, sentence, labels) or commentary(new, sentence)
    if comment:
        return Check("comment", f"It {comment} — a comment on the text, not part of it. Answer with the edited "
                     "sentence only.")
    if _norm(new) == _norm(sentence):
        return Check("unchanged", "It repeats the sentence without changing it.")
    if len(new) > max(3 * len(sentence), len(sentence) + 120):
        return Check("too long", f"It is {len(new)} characters long, far longer than the sentence ({len(sentence)}).")
    own = word_edit_distance(sentence, new)
    new_runs, own_runs = _ngrams(new), _ngrams(sentence)
    for other in others:
        if _norm(other) == _norm(sentence) or len(_norm(other).split()) < 4:
            continue
        if (f" {_norm(other)} " in f" {_norm(new)} " or word_edit_distance(other, new) < own
                or new_runs & (_ngrams(other) - own_runs)):
            return Check("wrong sentence", "It copies another sentence of the text instead of editing the sentence "
                         "to edit.")
    repeated = repetition(new, sentence)
    if repeated:
        return Check("repeated", f"It {repeated}. Say each part once.")
    if len(_norm(sentence).split()) >= 5 and own > MAX_SENTENCE_DISTANCE:
        return Check("not an edit", "It replaces the whole sentence; keep its words and change only the few "
                     "that decide the label.")
    missing = missing_words(new, keep)
    if missing:
        return Check("missing words", "It leaves out words that must stay exactly as they are: "
                     + ", ".join(f'"{w}"' for w in missing) + ".")
    if guard is not None:
        leaked = guard.find(new, original_text)
        if leaked:
            return Check("prompt leak", f'It copies "{leaked}" from the examples, which do not belong to this text.')
    coined = coined_words(new, original_text or sentence, known=known)
    if coined:
        named = " and ".join(f'"{w}"' for w in coined[:2])
        return Check("coined word", f"{named} {'are' if len(coined[:2]) > 1 else 'is'} not an English word. Use real "
                     "words.")
    if lean is not None and lean(new) - lean(sentence) < -MAX_WRONG_LEAN:
        wrong = _wrong_words(new, sentence, getattr(lean, "strong", {}))
        named = ", ".join(f'"{w}"' for w in wrong[:4]) or "its new words"
        return Check("wrong direction", f"It reads less {target or 'like the wanted label'} than before: {named} "
                     f"point the other way. Use words that express {target or 'the wanted label'}.")
    return None


def _blank(gap: str) -> bool:
    """Whether ``gap`` (text between two sentences) holds only white space and line-break tags."""
    return not re.sub(r"<br\s*/?>", "", gap, flags=re.IGNORECASE).strip()


def assemble(base: str, spans: Sequence[tuple[int, int]], replacements: Mapping[int, str],
             other: Callable[[str], str] = lambda s: s) -> str:
    """``base`` with sentence ``i`` (at ``spans[i]``) replaced by ``replacements[i]``; others through ``other``.

    Text between and around sentences is kept byte for byte, except that a sentence replaced by ``""`` (removed)
    takes the break after it along — white space and line-break tags (``<br />``) — or, when it is the last
    sentence, the break before it.

    Examples
    --------
    >>> assemble("Good cast.  Bad plot!", [(0, 10), (12, 21)], {1: "Fine plot!"})
    'Good cast.  Fine plot!'
    >>> spans = [(0, 10), (11, 20), (21, 25)]
    >>> assemble("Good cast. Must see! Dull", spans, {1: ""}), assemble("Good cast. Must see! Dull", spans, {2: ""})
    ('Good cast. Dull', 'Good cast. Must see!')
    >>> assemble("Dull.<br /><br />2/10", [(0, 5), (17, 21)], {1: ""})
    'Dull.'
    """
    out, last = [], 0
    for i, (start, end) in enumerate(spans):
        out.append(base[last:start])
        new = replacements[i] if i in replacements else other(base[start:end])
        last = end
        if i in replacements and not new:
            after = spans[i + 1][0] if i + 1 < len(spans) else len(base)
            if _blank(base[end:after]):
                last = after
                if i + 1 == len(spans) and _blank(out[-1]):
                    out[-1] = ""
        out.append(new)
    out.append(base[last:])
    return "".join(out)
