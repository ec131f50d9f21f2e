"""Is a triple supported by its sentence? No invented words, no dropped or added negation.

:func:`engine.llm.triple_format.parse_answer` already rejects triples whose subject and object
share less than half of their words with the sentence (echoes of the prompt's examples). A
triple that passes can still state something the sentence does not say; :func:`support_problem`
adds two stricter checks, on lemmas in context (spaCy's lemmatiser from :mod:`engine.text.nlp`,
or a suffix rule without it):

* **words** — every content word (not a function word or pronoun) of the subject and of the
  object must occur in the sentence, as the same lemma or with the same first five letters
  (``battling`` ~ ``battle``). One exception: when the sentence holds a pronoun (``it``,
  ``this``, ``he`` …), one content word may be missing — the noun the model put in the
  pronoun's place (``I loved it`` → ``I | loved | the film``).
* **polarity** — a negation cue (``not``, ``n't``, ``never``, ``no``, ``nothing``, ``lacks`` …)
  covers the words after it up to a clause break (punctuation, ``but``, ``although`` …, at most
  :data:`SCOPE` words). A triple without a cue whose claim (the predicate's content words, or the
  object's after a copula such as ``is``) lies inside such a scope contradicts the sentence (``I did not like the ending`` → ``I | like | the ending``); a
  triple with a cue taken from a sentence without any states the reverse.

Both are rules, not understanding: they catch the reversed and invented facts small models
produce, and miss subtler ones (swapped roles, wrong attachments).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.llm.triple_format import Triple
from engine.text import normalize
from engine.text.nlp import spacy_lemmas

__all__ = ["NEGATION_CUES", "SCOPE", "support_problem", "supported"]

#: Words (lemmas) that negate what follows them.
NEGATION_CUES = frozenset(
    "not n't no never nothing none nobody nowhere neither nor without cannot lack lacking fail hardly barely".split()
)
#: Words after a cue that it can cover.
SCOPE = 6
#: Words that end a negation's scope.
_SCOPE_BREAKS = frozenset("but although though yet however whereas while because".split())
#: Cues that are not negations in these two-word phrases (``not only … but also``).
_NOT_NEGATION = {("not", "only"), ("no", "doubt"), ("no", "matter"), ("not", "just")}
_FUNCTION = frozenset(
    "a an the of in on at to for from with by as and or but if so than then too very just also even "
    "is are was were be been being am do does did have has had will would shall should can could may might must "
    "this that these those it its it's there here what which who whom whose when where how why "
    "i me my mine myself we us our ours you your yours he him his she her hers they them their theirs "
    "one ones some any all each every much many more most such own other about into over out up down off "
    "again ever still really quite through after before during under against between across around".split()
)
_PRONOUNS = frozenset("it this that these those he him she her they them".split())
_TOKEN = re.compile(r"n't|[^\W_]+|[.,;:!?()\"]", re.IGNORECASE)


def _suffix_lemma(word: str) -> str:
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + repl
    return word


def _tokens(text: str) -> list[tuple[str, str]]:
    """``(word, lemma)`` in order, lower-cased; punctuation kept as its own token."""
    found = spacy_lemmas(text)
    if found is None:
        out = []
        for token in _TOKEN.findall(text.replace("\u2019", "'")):
            word = token.lower()
            if word.endswith("n't") and word != "n't":
                out += [(word[:-3], word[:-3]), ("n't", "not")]
            else:
                out.append((word, _suffix_lemma(word)))
        return out
    out = []
    for token, lemma in found:
        word = normalize(token).replace("\u2019", "'")
        if word:
            out.append((word, "not" if word in ("n't", "not") else normalize(lemma) or word))
    return out


def _is_cue(tokens: Sequence[tuple[str, str]], i: int) -> bool:
    word, lemma = tokens[i]
    if word not in NEGATION_CUES and lemma not in NEGATION_CUES:
        return False
    after = tokens[i + 1][0] if i + 1 < len(tokens) else ""
    return (lemma, after) not in _NOT_NEGATION and (word, after) not in _NOT_NEGATION


def _negated(tokens: Sequence[tuple[str, str]]) -> set[str]:
    """Lemmas and words inside the scope of a negation cue."""
    covered: set[str] = set()
    for i in range(len(tokens)):
        if not _is_cue(tokens, i):
            continue
        for word, lemma in tokens[i + 1 : i + 1 + SCOPE]:
            if word in _SCOPE_BREAKS or not word[:1].isalnum():
                break
            covered |= {word, lemma}
    return covered


def _content(tokens: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(w, lem) for w, lem in tokens if w[:1].isalnum() and w not in _FUNCTION and lem not in _FUNCTION
            and w not in NEGATION_CUES and lem not in NEGATION_CUES]


def _found(word: str, lemma: str, words: set[str], prefixes: set[str]) -> bool:
    return word in words or lemma in words or (len(word) >= 5 and word[:5] in prefixes) or (
        len(lemma) >= 5 and lemma[:5] in prefixes)


def support_problem(triple: Triple, sentence: str) -> str | None:
    """Why ``triple`` is not supported by ``sentence`` (see the module doc), or ``None`` if it is.

    Examples
    --------
    >>> support_problem(Triple("The plot", "is", "thin"), "The plot is painfully thin.") is None
    True
    >>> support_problem(Triple("I", "liked", "the ending"), "I did not like the ending.")
    'the sentence negates it (like, ending)'
    """
    sent = _tokens(sentence)
    have = {w for w, _ in sent} | {lem for _, lem in sent}
    prefixes = {w[:5] for w in have if len(w) >= 5}
    subject, predicate, obj = (_tokens(part) for part in triple)
    args = _content(subject) + _content(obj)
    missing = [w for w, lem in args if not _found(w, lem, have, prefixes)]
    allowed = 1 if have & _PRONOUNS else 0
    if len(missing) > allowed:
        return f"words not in the sentence ({', '.join(dict.fromkeys(missing))})"

    triple_tokens = [*subject, *predicate, *obj]
    triple_negates = any(_is_cue(triple_tokens, i) for i in range(len(triple_tokens)))
    sentence_negates = any(_is_cue(sent, i) for i in range(len(sent)))
    if triple_negates and not sentence_negates:
        return "a negation the sentence does not have"
    if not triple_negates and sentence_negates:
        scope = _negated(sent)
        claim = _content(predicate) or _content(obj)  # the verb, or the complement of a copula
        hit = [lem for w, lem in claim if w in scope or lem in scope]
        if hit:
            return f"the sentence negates it ({', '.join(dict.fromkeys(hit))})"
    return None


def supported(triple: Triple, sentence: str) -> bool:
    """Whether :func:`support_problem` finds nothing."""
    return support_problem(triple, sentence) is None
