"""Canonical word segmentation and sub-word token alignment (pure Python + numpy).

Also here, imported on their own: :mod:`engine.text.sentences` (the one sentence splitter) and
:mod:`engine.text.nlp` (the one spaCy pipeline, loaded lazily).
"""

from engine.text.align import Alignment, align_tokens, group_to_word_scores, token_to_word_scores
from engine.text.words import KINDS, LEXICAL_KINDS, Word, lexical_words, normalize, segment, words_of

__all__ = [
    "KINDS",
    "LEXICAL_KINDS",
    "Alignment",
    "Word",
    "align_tokens",
    "group_to_word_scores",
    "lexical_words",
    "normalize",
    "segment",
    "token_to_word_scores",
    "words_of",
]
