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


def scripted_reply(body: dict[str, Any]) -> str:
    """Triples for ``Sentence:``, flipped lines for ``Facts to edit:``, a sentence for ``Facts, in order:``."""
    user = _last_user(body)
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
