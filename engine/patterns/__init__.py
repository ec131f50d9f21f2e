"""Symbolic patterns (variation-theory active learning): the language, the matcher, synthesis.

:mod:`~engine.patterns.syntax` parses the pattern language (words, ``[word]`` forms, ``(word)``
soft matches, ``$TYPE`` entities, part-of-speech tags, ``*``, ``+`` and ``|``);
:mod:`~engine.patterns.match` finds the span a pattern matches; :mod:`~engine.patterns.soft`
holds the soft matchers; :mod:`~engine.patterns.synthesis` searches patterns that tell one label
from the others; :mod:`~engine.patterns.store` keeps a dataset's patterns in the project.
"""

from __future__ import annotations

from engine.patterns.errors import PatternError, PatternSyntaxError, PatternToolError, UnknownSoftMatcherError
from engine.patterns.match import Match, Matcher, find, matches
from engine.patterns.syntax import Element, Pattern, parse

__all__ = ["Element", "Match", "Matcher", "Pattern", "PatternError", "PatternSyntaxError", "PatternToolError",
           "UnknownSoftMatcherError", "find", "matches", "parse"]
