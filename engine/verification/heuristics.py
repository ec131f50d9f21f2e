"""Heuristic checks for the ways a small LLM fails at rewriting a text.

Each function looks at one generated text (``new``) next to the text it was made from
(``original``) and returns a short reason when it finds the failure, else ``None``. They are
plain string functions (no model, no I/O), tuned on the recorded answers of the bundled
models in ``tests/fixtures/llm_outputs``:

* :func:`prompt_echo` — the answer repeats the prompt's scaffolding ("Sentence to edit:",
  "Here is the rewritten review", "Subject:") instead of being only the text;
* :func:`refusal` — the model declines ("I'm sorry, but I can't …", "As an AI …");
* :func:`bare_label` — the answer is a label name ("Positive.") rather than a text;
* :func:`label_named` — the text names the label it should express ("a 'very negative' film",
  "Sentiment: positive") instead of expressing it;
* :func:`commentary` — the answer describes the text ("The reviewer expresses …") instead of
  being a rewritten text;
* :func:`formatting` — markdown or list formatting the original did not have (``**bold**``,
  ``# heading``, bullets, numbered lines, code fences);
* :func:`truncation` — the text stops mid-sentence (no closing punctuation where the original
  had one, a dangling "and"/"the" or comma at the end) or lost most of its length;
* :func:`copy` — the text is the original again (nothing but case, spacing or punctuation
  changed);
* :func:`coined_word` — a word that is in no English word list and not in the dataset
  ("whitemailed" for "blackmailed", :mod:`engine.text.lexicon`);
* :func:`repetition` — a run of words said twice that the original says once (a clause the
  model wrote again after editing it).

Examples
--------
>>> refusal("I'm sorry, but I can't help with rewriting this review.")
'refusal: "I\\'m sorry"'
>>> bare_label("Negative.", "The film drags.", ["Negative", "Positive"])
'only the label "Negative"'
>>> copy("The film drags!", "the film  drags.") is not None
True
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from engine.text.distance import word_edit_distance

__all__ = ["bare_label", "coined_word", "commentary", "copy", "formatting", "label_named", "prompt_echo", "refusal",
           "repetition", "truncation"]

# ----------------------------------------------------------------------------- prompt echo

#: Field names of the app's prompts and the usual preambles of chat models, at a line start.
_ECHO_LINE = re.compile(
    r"^\s*(?:[*_#>\s-]*)(?:"
    r"(?:original|edited|rewritten|new|revised|counterfactual|modified)\s+(?:text|sentence|review|version|hypothesis|premise)"
    r"|sentence to edit|words to (?:change|copy exactly|keep)|context, not to be copied|target(?: label)?"
    r"|the text reads as|make the (?:sentence|text) read as|task|labels?|subject|predicate|object|triples?"
    r"|answer|output|input|explanation|note|changes made)\s*:",
    re.IGNORECASE | re.MULTILINE)
_ECHO_PREAMBLE = re.compile(
    r"^\s*(?:sure[,!.]?\s+)?(?:here(?:'s| is| are)|below is|i (?:have|'ve) (?:rewritten|edited|changed))\b"
    r"|\[SENTENCE\]|\{\{\w+\}\}",
    re.IGNORECASE | re.MULTILINE)


def _shared_line_start(pattern: re.Pattern[str], new: str, original: str) -> str | None:
    """The first match of ``pattern`` in ``new`` that ``original`` does not have itself."""
    for match in pattern.finditer(new):
        found = match.group(0).strip()
        if found.lower() not in original.lower():
            return found
    return None


def prompt_echo(new: str, original: str = "") -> str | None:
    """The prompt's scaffolding repeated in the answer ("Sentence to edit:", "Here is …").

    Examples
    --------
    >>> prompt_echo("Edited sentence: The plot is thin.")
    'echoes "Edited sentence:"'
    >>> prompt_echo("Here is the rewritten review: a dull film.")
    'echoes "Here is"'
    >>> prompt_echo("Subject: a review, but the film is dull.", "Subject: a review, but the film is fine.") is None
    True
    """
    found = _shared_line_start(_ECHO_LINE, new, original) or _shared_line_start(_ECHO_PREAMBLE, new, original)
    return f'echoes "{found}"' if found else None


# ----------------------------------------------------------------------------- refusal

_REFUSAL = re.compile(
    r"^\s*(?:i(?:'m| am) sorry|i apologi[sz]e|unfortunately)\b"
    r"|\b(?:i(?:'m| am) sorry|i apologi[sz]e)[^.!?]{0,40}\b(?:can(?:no|')t|cannot|unable|won't|will not|not able)\b"
    r"|\bi (?:can(?:no|')t|cannot|won't|will not|am unable to|'m unable to|am not able to)"
    r" (?:help|assist|comply|fulfil+|provide|create|generate|rewrite|edit)\b"
    r"|\bas an ai\b|\bas a language model\b|\bi do not feel comfortable\b|\bit is not appropriate\b",
    re.IGNORECASE)


def refusal(new: str, original: str = "") -> str | None:
    """The model declined the task ("I'm sorry, but I cannot …", "As an AI language model …").

    A phrase the original already holds is not a refusal ("I'm sorry I watched it").

    Examples
    --------
    >>> refusal("As an AI language model, I cannot write reviews.")
    'refusal: "As an AI"'
    >>> refusal("I'm sorry I paid for this.", "I'm sorry I paid for this; it was great.") is None
    True
    """
    for match in _REFUSAL.finditer(new):
        if match.group(0).lower() not in original.lower():
            return f'refusal: "{match.group(0)}"'
    return None


# ----------------------------------------------------------------------------- bare label

def _words(text: str) -> list[str]:
    return re.findall(r"[\w']+", text.lower())


#: Words that may surround a label name in an answer that is nothing but the label.
_LABEL_FILLER = frozenset("label sentiment the this that is it its answer class text review movie film reads as "
                          "and a an of overall clearly now edited sentence".split())


def bare_label(new: str, original: str = "", labels: Sequence[str] = ()) -> str | None:
    """The answer is (almost) only a label name: "Negative.", "This movie review is Negative.".

    Examples
    --------
    >>> bare_label("Label: positive", "Great.", ["negative", "positive"])
    'only the label "positive"'
    >>> bare_label("The movie review is negative, and the sentiment is negative.", "x", ["Negative", "Positive"])
    'only the label "Negative"'
    >>> bare_label("Positive vibes all round in this lively film.", "x", ["Negative", "Positive"]) is None
    True
    """
    words = _words(new)
    if not words or not labels or len(words) > 14:
        return None
    for label in labels:
        key = set(_words(label))
        if not key or not key <= set(words) or set(_words(original)) <= _LABEL_FILLER | key:
            continue
        if all(w in _LABEL_FILLER or w in key for w in words):
            return f'only the label "{label}"'
    return None


#: A labelling word just before a label name: "Sentiment: negative", "rated as positive".
_LABEL_CUE = re.compile(r"\b(?:label(?:led|ed)?|sentiment|class(?:ified)?|rated|rating|verdict|category|tone)"
                        r"\s*(?:as|is|was|:|=|-)?\s*[\"'“‘(\[*]?\s*$", re.IGNORECASE)
#: A labelling noun just after a label name: "a negative sentiment", "(positive label)".
_LABEL_CUE_AFTER = re.compile(r"^\s*[\"'”’)\]*]?\s*(?:sentiments?|labels?|class(?:es)?|categor(?:y|ies)|tones?|"
                              r"connotations?)\b", re.IGNORECASE)
_OPENERS = "\"'“‘([*"
_CLOSERS = "\"'”’)]*"


def label_named(new: str, original: str = "", labels: Sequence[str] = ()) -> str | None:
    """The text names a label instead of expressing it: a label quoted or bracketed
    ("a 'very negative' film", "(Positive)"), after a labelling word ("Sentiment: negative",
    "rated as positive") or before one ("which is a negative sentiment"), or a label name of
    several words ("very negative") written out. A
    label the original names as often does not count, nor a label without a word of three
    letters (numeric labels such as "1" are common words).

    Examples
    --------
    >>> label_named("The plot is thin and the acting 'very negative'.", "The plot is rich.", ["very negative", "negative"])
    'names the label "very negative"'
    >>> label_named("A dull film. Sentiment: negative", "A fine film.", ["negative", "positive"])
    'names the label "negative"'
    >>> label_named("Nothing positive to say about this dull film.", "A fine film.", ["negative", "positive"]) is None
    True
    >>> label_named("Acted with quiet intensity, which is a negative sentiment.", "Acted with quiet intensity.",
    ...             ["Negative", "Positive"])
    'names the label "Negative"'
    """
    for label in sorted(labels, key=len, reverse=True):
        words = _words(label)
        if not any(len(w) >= 3 and w.isalpha() for w in words):
            continue
        phrase = re.compile(r"(?<!\w)" + r"[\s_-]+".join(map(re.escape, words)) + r"(?!\w)", re.IGNORECASE)
        found = list(phrase.finditer(new))
        if not found or len(found) <= len(phrase.findall(original)):
            continue
        for match in found:
            before, after = new[: match.start()], new[match.end() :]
            quoted = before[-1:] in _OPENERS and before[-1:] != "" and after[:1] in _CLOSERS and after[:1] != ""
            if quoted or _LABEL_CUE.search(before[-40:]) or _LABEL_CUE_AFTER.match(after) or len(words) > 1:
                return f'names the label "{label}"'
    return None


# ----------------------------------------------------------------------------- commentary

_COMMENTARY = re.compile(
    r"\b(?:the|this) (?:movie |film )?review(?:er)?(?:'s)? (?:is|was|has|expresses|seems|praises|mentions|says|"
    r"highlights|concludes|recommends|states|describes)\b"
    r"|\bthe reviewers?\b|\bthe (?:original|edited|rewritten|revised) (?:review|text|sentence|version)\b"
    r"|\bhas been (?:edited|rewritten|changed|modified)\b|\bthe (?:overall )?(?:tone|sentiment) (?:is|of)\b"
    r"|\bthe (?:new |edited |original |given )?(?:hypothesis|premise) (?:is|was|states|says|suggests|implies|means|"
    r"shows|describes|contradicts|entails)\b",
    re.IGNORECASE)


def commentary(new: str, original: str = "") -> str | None:
    """The answer talks *about* the text ("The reviewer expresses …") instead of being one.

    Small models asked to rewrite a review often describe it instead. A phrase the original
    holds itself does not count.

    Examples
    --------
    >>> commentary("The movie review is positive, and the reviewer seems pleased.")
    'describes the text: "The movie review is"'
    >>> commentary("I loved it. The reviewer in the paper was wrong.", "I hated it. The reviewer in the paper was wrong.") is None
    True
    >>> commentary("The hypothesis states that two young boys are playing a game.", "Two young boys are playing.")
    'describes the text: "The hypothesis states"'
    """
    for match in _COMMENTARY.finditer(new):
        if match.group(0).lower() not in original.lower():
            return f'describes the text: "{match.group(0)}"'
    return None


# ----------------------------------------------------------------------------- formatting

_FORMAT = (
    (re.compile(r"```"), "a code fence"),
    (re.compile(r"\*\*(?=[^\s*])[^*\n]*[^\s*]\*\*|__(?=[^\s_])[^_\n]*[^\s_]__"), "bold markdown"),
    (re.compile(r"^\s{0,3}#{1,6}\s+\S", re.MULTILINE), "a markdown heading"),
    (re.compile(r"^\s*[-*\u2022]\s+\S", re.MULTILINE), "a bulleted list"),
    (re.compile(r"^\s*\d{1,2}[.)]\s+\S", re.MULTILINE), "a numbered list"),
    (re.compile(r"^\s*>\s+\S", re.MULTILINE), "a block quote"),
)


def formatting(new: str, original: str = "") -> str | None:
    """Markdown or list formatting that the original does not have.

    Examples
    --------
    >>> formatting("* The cast is weak.\\n* The plot drags.", "The cast is strong. The plot flies.")
    'a bulleted list'
    >>> formatting("A **dull** film.")
    'bold markdown'
    >>> formatting("1. Great!", "1. Bad!") is None
    True
    """
    for pattern, name in _FORMAT:
        if pattern.search(new) and not pattern.search(original):
            return name
    return None


# ----------------------------------------------------------------------------- truncation

#: Words a complete sentence does not end with.
_DANGLING = frozenset("a an the and or but of to in on at by for with from that which who whose my your his her "
                      "their our its very than as".split())
_TRAILING_BREAKS = re.compile(r"(?:\s|<br\s*/?>)+$", re.IGNORECASE)
_END = re.compile(r"""[.!?\u2026)\]"'\u201d\u2019*]\s*$""")

#: A text that keeps less than this share of the original's words lost most of it.
MIN_LENGTH_SHARE = 0.4


def truncation(new: str, original: str = "", *, finish_reason: str | None = None) -> str | None:
    """The text stops mid-sentence, was cut at the token limit, or kept too little of the original.

    Examples
    --------
    >>> truncation("The cast is weak and the plot", "The cast is strong and the plot is tight.")
    'ends mid-sentence ("plot")'
    >>> truncation("The cast is weak and", "The cast is strong and fun")
    'ends with "and"'
    >>> truncation("Weak.", "The cast is strong, the plot is tight and the score soars over every scene.")
    'keeps 1 of 15 words'
    >>> truncation("A weak cast.", "A strong cast.") is None
    True
    """
    if finish_reason == "length":
        return "cut at the token limit"
    text = _TRAILING_BREAKS.sub("", new)
    original = _TRAILING_BREAKS.sub("", original)
    words = _words(text)
    if not words:
        return "empty"
    last = re.findall(r"[\w']+", text)[-1]
    if last in _DANGLING and not text.endswith((".", "!", "?")) and words[-1] not in _words(original)[-1:]:
        return f'ends with "{last}"'
    if text.endswith((",", ";", ":", " -", "\u2014")) and not original.endswith(text[-1]):
        return f'ends with "{text[-1]}"'
    n_orig = len(_words(original))
    # a text as long as the original that only lost its full stop was finished (a human edit may do that)
    if _END.search(original.strip()) and not _END.search(text) and len(words) < 0.9 * n_orig:
        return f'ends mid-sentence ("{words[-1]}")'
    if n_orig >= 8 and len(words) < MIN_LENGTH_SHARE * n_orig:
        return f"keeps {len(words)} of {n_orig} words"
    return None


# ----------------------------------------------------------------------------- copy

#: Word-level edit distance below which a text counts as a copy (nothing but form changed).
COPY_DISTANCE = 0.0


def copy(new: str, original: str) -> str | None:
    """The text is the original again: only case, spacing or punctuation differ.

    Examples
    --------
    >>> copy("A great film", "A great film!")
    'same words as the original'
    >>> copy("A dull film", "A great film") is None
    True
    """
    if _words(new) == _words(original) or (original and word_edit_distance(original, new) <= COPY_DISTANCE):
        return "same words as the original"
    return None


def coined_word(new: str, original: str, known: Collection[str] = frozenset()) -> str | None:
    """A word of ``new`` that is not in ``original``, an English word list or ``known`` (the dataset's words):
    a word the model made up (:func:`engine.text.lexicon.coined_words`). Not judged for a text that is not
    mostly English.

    Examples
    --------
    >>> coined_word("The villain whitemailed the mayor.", "The villain blackmailed the mayor.")
    'made-up word "whitemailed"'
    >>> coined_word("The villain flattered the mayor.", "The villain blackmailed the mayor.") is None
    True
    """
    from engine.text.lexicon import coined_words

    found = coined_words(new, original, known=known)
    if not found:
        return None
    return "made-up word" + "s" * (len(found) > 1) + " " + ", ".join(f'"{w}"' for w in found[:3])


# ----------------------------------------------------------------------------- repetition

#: Words in a row that, said twice by the answer and fewer times by the original, make a repetition.
#: Six: the CAD editors' revisions repeat a run of five 19 times in 1,952 pairs (parallel phrasing,
#: "never bring back the mole, never bring back the mole"), of six 8 times, mostly film titles.
REPEAT_WORDS = 6


def repetition(new: str, original: str = "", *, run: int = REPEAT_WORDS) -> str | None:
    """A run of ``run`` or more words that ``new`` says twice and ``original`` says fewer times.

    Small models sometimes write a clause again after editing it ("it was not funny at all, it was
    not funny at all"); the result reads as broken. Repetitions the original has are left alone.

    Examples
    --------
    >>> repetition("The plot is thin and the jokes all fall flat, and the jokes all fall flat again.",
    ...            "The plot is rich and the jokes land.")
    'says "and the jokes all fall flat" twice'
    >>> repetition("Never again, never again, never again.", "Never again, never again, never again.") is None
    True
    >>> repetition("A dull film with a dull cast.", "A fine film with a fine cast.") is None
    True
    """
    words = _words(new)
    if len(words) < 2 * run:
        return None
    seen: dict[tuple[str, ...], int] = {}
    for i in range(len(words) - run + 1):
        seen.setdefault(tuple(words[i:i + run]), i)
    old = _words(original)
    for i in range(len(words) - run + 1):
        gram = tuple(words[i:i + run])
        first = seen[gram]
        if first + run <= i:  # a second, non-overlapping occurrence
            said = sum(tuple(old[j:j + run]) == gram for j in range(len(old) - run + 1))
            if said < 2:
                return f'says "{" ".join(gram)}" twice'
    return None
