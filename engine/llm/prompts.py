"""Prompt files: chat messages kept as text under ``resources/prompts/``.

A prompt file is Markdown with a small front matter (``name``, ``version``) and one
section per chat message (``## system``, ``## user``, ``## assistant``), in order. HTML
comments are dropped. ``{{field}}`` placeholders are filled by :meth:`Prompt.render` by
plain substitution: the inserted values are data and are never interpreted, so braces or
``{{...}}`` inside them stay as they are.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from engine.llm.base import Message
from engine.llm.errors import LLMConfigError

_SECTION = re.compile(r"^##\s+(system|user|assistant)\s*$", re.MULTILINE)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_FIELD = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class Prompt:
    """A parsed prompt file.

    Attributes
    ----------
    name, version
        From the front matter.
    messages
        The chat messages, placeholders unfilled.
    sha256
        Hash of the file's text (recorded with every run for provenance).
    """

    name: str
    version: int
    messages: tuple[Message, ...]
    sha256: str

    @property
    def fields(self) -> set[str]:
        """Placeholder names used in the messages."""
        return {f for m in self.messages for f in _FIELD.findall(m["content"])}

    def render(self, **values: str) -> list[Message]:
        """The messages with every ``{{field}}`` replaced by ``values[field]``.

        Raises
        ------
        LLMConfigError
            A placeholder has no value.
        """
        missing = self.fields - set(values)
        if missing:
            raise LLMConfigError(f"Prompt {self.name!r} needs {', '.join(sorted(missing))}.", "This is a bug.")

        def fill(text: str) -> str:
            # One pass over the template only: values are inserted verbatim and never re-scanned.
            return _FIELD.sub(lambda m: values[m.group(1)], text)

        return [{"role": m["role"], "content": fill(m["content"])} for m in self.messages]


def parse_prompt(text: str, *, default_name: str = "prompt") -> Prompt:
    """Parse a prompt file's text (see the module docs for the format)."""
    meta: dict[str, str] = {}
    body = text
    if text.startswith("---"):
        _, front, body = text.split("---", 2)
        for line in front.strip().splitlines():
            key, _, value = line.partition(":")
            meta[key.strip()] = value.strip()
    body = _COMMENT.sub("", body)
    parts = _SECTION.split(body)
    messages = []
    for role, content in zip(parts[1::2], parts[2::2]):
        messages.append({"role": role, "content": content.strip()})
    if not messages:
        raise LLMConfigError(f"Prompt {default_name!r} holds no '## user' section.", "Fix the prompt file.")
    return Prompt(
        name=meta.get("name", default_name),
        version=int(meta.get("version", 1)),
        messages=tuple(messages),
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


@lru_cache(maxsize=32)
def load_prompt(name: str) -> Prompt:
    """Load ``resources/prompts/<name>.md``."""
    path = resources.files("resources") / "prompts" / f"{name}.md"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LLMConfigError(f"No prompt file {name}.md in resources/prompts.", "Reinstall Counterbias Studio.") from None
    return parse_prompt(text, default_name=name)
