"""A scripted "LLM" for the stub server: answers each CoBA prompt in the expected shape.

Used with :class:`tests.engine.llm.stub_server.StubServer` (a real HTTP server on loopback) when
a test needs fast, deterministic answers (fault injection, GUI tests); the real-model path is
tested with SmolLM2 in ``test_end_to_end.py``.
"""

from __future__ import annotations

import re
from typing import Any

FLIP = {"love": "hate", "hate": "love", "best": "worst", "worst": "best", "favorite": "least favorite",
        "beautiful": "ugly", "good": "bad", "bad": "good", "great": "awful", "recommend": "not recommend"}


def _last_user(body: dict[str, Any]) -> str:
    return [m["content"] for m in body.get("messages", []) if m.get("role") == "user"][-1]


def _flip(text: str) -> str:
    return re.sub(r"\b(" + "|".join(FLIP) + r")\b", lambda m: FLIP[m.group(1)], text)


def _rewrite(line: str) -> str:
    """Flip a known opinion word; else negate the object (a rewrite must change something)."""
    flipped = _flip(line)
    parts = [p.strip() for p in line.split("|")]
    if flipped != line or len(parts) != 3:
        return flipped
    return f"{parts[0]} | {parts[1]} | not {parts[2]}"


def edit_sentence(sentence: str, keep: tuple[str, ...] = (), target: str | None = None) -> str:
    """Flip a known opinion word of a sentence (not one of ``keep``; with a ``target``, only words of the other
    side: a sentence already praising stays praising when asked for Positive); else negate its first
    ``is``/``was``/``are``."""
    side = (NEGATIVE if target.lower().startswith("pos") else POSITIVE) if target else set(FLIP)
    flips = [w for w in FLIP if w not in {k.lower() for k in keep} and w in side]
    flipped = re.sub(r"\b(" + "|".join(flips) + r")\b", lambda m: FLIP[m.group(1)], sentence) if flips else sentence
    if flipped != sentence:
        return flipped
    negated = re.sub(r"\b(is|was|are|were)\b", r"\1 not", sentence, count=1)
    return negated if negated != sentence else "Not really: " + sentence


def words_to_keep(body: dict[str, Any]) -> tuple[str, ...]:
    """The "Words to copy exactly" of the (last) edit-mode request."""
    users = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
    asked = [u for u in users if "Words to copy exactly:" in u and "Make the sentence read as:" in u]
    if not asked:
        return ()
    line = asked[-1].split("Words to copy exactly:", 1)[1].split("\n", 1)[0]
    return tuple(w.strip() for w in line.split(",") if w.strip() and w.strip() != "(none)")


def target_of(body: dict[str, Any]) -> str | None:
    """The label an edit-mode request asks for (``Make the sentence read as: X``), or ``None``."""
    found = re.findall(r"Make the sentence read as: ([^.\n]+)", " ".join(
        m["content"] for m in body.get("messages", []) if m.get("role") == "user"))
    return found[-1].strip() if found else None


def sentence_to_edit(body: dict[str, Any]) -> str | None:
    """The sentence of the (first) edit-mode request in a conversation, or ``None``."""
    users = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
    asked = [u for u in users if "Sentence to edit:" in u and "Make the sentence read as:" in u]
    if not asked:
        return None
    return asked[-1].split("Sentence to edit:", 1)[1].split("\n", 1)[0].strip()


#: Opinion words of the scripted sentence reader.
POSITIVE = {"love", "best", "favorite", "beautiful", "good", "great", "lovely", "superb", "recommend"}
NEGATIVE = {"hate", "worst", "ugly", "bad", "awful", "dreadful", "poor", "boring", "dull"}


def read_sentence(user: str) -> str:
    """The scripted sentence reader: the label (from the prompt's list) whose opinion words outnumber the
    other's in the sentence, else the word for none."""
    head, sentence = user.split("Sentence to read:", 1)
    listed = head.split("(labels:", 1)[1].split(")", 1)[0]
    names, none = listed.split("; or ")
    labels = [n.strip() for n in names.split(",")]
    words = re.findall(r"[a-z]+", sentence.lower())
    pos = neg = 0
    for before, word in zip(["", *words], words):  # "not good" counts as negative
        flip = before in {"not", "never", "no"}
        pos += (word in POSITIVE) != flip and (word in POSITIVE or word in NEGATIVE)
        neg += (word in NEGATIVE) != flip and (word in POSITIVE or word in NEGATIVE)
    wanted = "pos" if pos > neg else "neg" if neg > pos else None
    found = [label for label in labels if wanted and label.lower().startswith(wanted)]
    return found[0] if found else none.strip()


def opinion_words(user: str) -> str:
    """The scripted opinion-word marker: the sentence's opinion words (both sides), comma-separated, or none."""
    sentence = user.split("Sentence:", 1)[1]
    found = [w for w in re.findall(r"[A-Za-z]+", sentence) if w.lower() in POSITIVE | NEGATIVE]
    return ", ".join(dict.fromkeys(found)) or "none"


#: Opposites of the scripted phrase swap (``opposite_phrase``).
OPPOSITE = {**FLIP, "lovely": "dull", "superb": "poor", "dull": "lovely"}


def opposite_phrase(user: str) -> str:
    """The scripted phrase swap: the phrase with its known opinion words flipped (``not`` before it otherwise)."""
    phrase = user.split("\nPhrase:", 1)[1].split("\n", 1)[0].strip()
    flipped = re.sub(r"\b(" + "|".join(OPPOSITE) + r")\b", lambda m: OPPOSITE[m.group(1)], phrase)
    return flipped if flipped != phrase else f"not {phrase}"


def scripted_reply(body: dict[str, Any]) -> str:
    """Triples for ``Sentence:``, flipped lines for ``Facts to edit:``, a sentence for ``Facts, in order:``,
    an edited sentence for ``Sentence to edit:`` (edit mode, repairs included), a label for ``Sentence to read:``,
    opinion words for ``Read as:``, the opposite of a phrase for ``Phrase:``."""
    user = _last_user(body)
    if "Sentence to read:" in user:
        return read_sentence(user)
    if "\nPhrase:" in user and "\nFrom " in user:
        return opposite_phrase(user)
    if "\nRead as:" in user and "\nSentence:" in user:
        return opinion_words(user)
    sentence = sentence_to_edit(body)
    if sentence is not None:
        return edit_sentence(sentence, words_to_keep(body), target_of(body))
    if "Facts to edit:" in user:
        lines = user.split("Facts to edit:", 1)[1].strip().splitlines()
        return "\n".join(_rewrite(line) for line in lines)
    if "Facts, in order:" in user:
        lines = user.split("Facts, in order:", 1)[1].strip().splitlines()
        parts = [" ".join(p.strip() for p in line.split("|")) for line in lines if line.count("|") == 2]
        return "Text: \"" + ". ".join(p[:1].upper() + p[1:] for p in parts) + ".\""
    if "exactly" in user and "lines" in user:  # rewrite repair
        return "a | b | c"
    sentence = user.split("Sentence:", 1)[-1].strip().rstrip(".!?")
    words = sentence.split()
    if len(words) < 3:
        return f"{sentence} | is | stated"
    return f"{words[0]} | {words[1]} | {' '.join(words[2:])}"
