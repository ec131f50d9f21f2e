"""Keywords of retrieved excerpts: their content words (CORE's "words to use").

CORE (Dixit et al., §3.2) removes determiners, conjunctions and punctuation from the retrieved
excerpts and hands the remaining words to the editor. Here a word is kept when

* it is lexical (:func:`engine.text.words.segment`: no punctuation, markup or bare numbers),
* it is not a function word (:data:`engine.text.words.FUNCTION_WORDS`: articles, conjunctions,
  prepositions, pronouns, auxiliaries; negations stay, they carry labels), and
* when spaCy's tagger is available (:func:`engine.text.nlp.spacy_tags`), its Penn Treebank tag
  is a content tag (nouns, verbs, adjectives, adverbs, interjections, foreign words): this also
  drops determiners, conjunctions, prepositions, modals and pronouns the list does not name.

Words come out in order of first appearance, once each (case-folded), optionally without the
words of the query itself (they would not steer the edit anywhere new).
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.text.words import FUNCTION_WORDS, normalize, segment

__all__ = ["CONTENT_TAG_PREFIXES", "content_words", "extract_keywords"]

#: Penn Treebank tag prefixes of content words.
CONTENT_TAG_PREFIXES = ("NN", "VB", "JJ", "RB", "UH", "FW")
_NEGATION = {"n't": "not", "n’t": "not"}


def _kept(key: str) -> bool:
    """A content word: has a letter, is no function word and no clitic (``'s``, ``'re``, ``'ll``)."""
    return any(ch.isalpha() for ch in key) and key not in FUNCTION_WORDS and not key.startswith("'")


def content_words(text: str, *, use_tagger: bool = True) -> list[str]:
    """The content words of one text, case-folded, in order (repeats kept).

    Parameters
    ----------
    use_tagger
        Filter by spaCy's part-of-speech tags when spaCy is installed (else the list alone).

    Examples
    --------
    >>> content_words("The plot was a total mess, and the acting wasn't any better!", use_tagger=False)
    ['plot', 'total', 'mess', 'acting', "wasn't", 'any', 'better']
    """
    if use_tagger:
        from engine.text.nlp import spacy_tags

        tags = spacy_tags(text)
        if tags is not None:
            out = []
            for _, token, tag in tags:
                key = _NEGATION.get(token.lower(), normalize(token))
                if tag.startswith(CONTENT_TAG_PREFIXES) and _kept(key):
                    out.append(key)
            return out
    return [normalize(w.text) for w in segment(text) if w.kind == "word" and _kept(normalize(w.text))]


def extract_keywords(
    texts: Iterable[str],
    *,
    exclude: Iterable[str] | str = (),
    max_words: int | None = None,
    use_tagger: bool = True,
) -> list[str]:
    """Content words of ``texts`` in order of first appearance, each once.

    Parameters
    ----------
    texts
        The retrieved excerpts.
    exclude
        Words (or a text whose words) to leave out, e.g. the query.
    max_words
        Keep at most this many.
    use_tagger
        See :func:`content_words`.

    Examples
    --------
    >>> extract_keywords(["A delightful, witty film.", "Truly delightful and never dull!"],
    ...                  exclude="A dull film.", use_tagger=False)
    ['delightful', 'witty', 'truly', 'never']
    """
    if isinstance(exclude, str):
        skip = {normalize(w.text) for w in segment(exclude) if w.is_lexical}
    else:
        skip = {normalize(w) for w in exclude}
    seen: set[str] = set()
    out: list[str] = []
    for text in texts:
        for word in content_words(text, use_tagger=use_tagger):
            if word in seen or word in skip:
                continue
            seen.add(word)
            out.append(word)
            if max_words is not None and len(out) >= max_words:
                return out
    return out
