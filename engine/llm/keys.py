"""API keys: where they come from, and how they are kept out of every message.

A key is read at the moment a backend is created, from the environment variable named in
the :class:`~engine.llm.config.LLMConfig` (``api_key_env``) or, if that is unset, from
the operating system's keyring (optional ``keyring`` package, service
:data:`KEYRING_SERVICE`, user name = the variable's name). The key is never written to
the project, an export, a log or a ``repr``: configs hold only the variable's *name*.
"""

from __future__ import annotations

import os
import re

from engine.llm.errors import MissingAPIKeyError

#: Keyring service under which keys are looked up (user name = the env-variable name).
KEYRING_SERVICE = "counterbias-studio"

#: Sent to servers that need no key (llama.cpp, vLLM, Ollama without auth).
NO_KEY = "no-key-required"

_MASK = "***"
# Bearer tokens and OpenAI-style keys that a server might echo back in an error body.
_KEY_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"),
)


class Secret:
    """A string that does not show itself in ``repr``/``str``.

    Parameters
    ----------
    value
        The secret (an API key).
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The secret itself (only for handing it to an HTTP client)."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self):  # never pickle a key into a worker process or a file
        raise TypeError("a Secret cannot be pickled")


def resolve_api_key(env_name: str | None) -> Secret:
    """Find the API key named by ``env_name``.

    Parameters
    ----------
    env_name
        Environment-variable name, or ``None`` for servers that need no key.

    Returns
    -------
    Secret
        The key (or :data:`NO_KEY` when ``env_name`` is ``None``).

    Raises
    ------
    MissingAPIKeyError
        ``env_name`` is given but neither the environment nor the keyring holds a key.
    """
    if not env_name:
        return Secret(NO_KEY)
    value = os.environ.get(env_name, "").strip()
    if value:
        return Secret(value)
    value = _from_keyring(env_name)
    if value:
        return Secret(value)
    raise MissingAPIKeyError(
        f"The API key variable {env_name} is not set, and the system keyring holds no key for it.",
        f"Set it before starting (e.g. 'export {env_name}=...'), store it with "
        f"'keyring set {KEYRING_SERVICE} {env_name}', or clear the key setting if the server needs none.",
    )


def _from_keyring(env_name: str) -> str | None:
    try:
        import keyring  # optional; lazy
    except ImportError:
        return None
    try:
        value = keyring.get_password(KEYRING_SERVICE, env_name)
    except Exception:  # no keyring backend on this machine (headless Linux): not an error
        return None
    return value.strip() if value else None


def redact(text: str, *secrets: Secret | str | None) -> str:
    """``text`` with each secret, bearer token and ``sk-`` key replaced by ``***``.

    Examples
    --------
    >>> redact("auth failed for sk-abcdefghijkl", None)
    'auth failed for ***'
    """
    for secret in secrets:
        value = secret.reveal() if isinstance(secret, Secret) else secret
        if value and value != NO_KEY and len(value) >= 4:
            text = text.replace(value, _MASK)
    for pattern in _KEY_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + _MASK, text)
    return text
