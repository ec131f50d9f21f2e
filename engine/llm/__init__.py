"""Language models behind one small protocol: backends, a registry, a response cache, a server.

Modules
-------
base
    :class:`ChatBackend` protocol, :class:`ChatRequest`, :class:`ChatResult`, :class:`Failure`.
config
    :class:`LLMConfig` (a backend *name* plus parameters; JSON round-trip; no secrets).
registry
    :func:`register_backend`, :func:`create_backend`, :func:`backend_names`.
openai_backend
    ``"openai"``: any OpenAI-compatible server (``openai`` imported lazily).
local_backend, gguf
    ``"local"``: the bundled GGUF models in-process via ``xllamacpp`` (imported lazily).
cache
    :class:`CachedClient`: the project's ``llm_cache`` table in front of any backend.
server
    :func:`start_local_server` and ``serve-llm``: a bundled model over HTTP on loopback.
triple_format
    The strict ``subject | predicate | object`` answer parser (used by :mod:`engine.counterbias.triples`).
errors, keys, batch, prompts
    Named errors; API keys and redaction; the async batch runner; prompt files.
"""

from engine.llm.base import ChatBackend, ChatRequest, ChatResult, Failure, Usage
from engine.llm.cache import BatchResult, CachedClient, cache_key
from engine.llm.config import LLMConfig
from engine.llm.registry import backend_names, create_backend, register_backend

__all__ = [
    "BatchResult",
    "CachedClient",
    "ChatBackend",
    "ChatRequest",
    "ChatResult",
    "Failure",
    "LLMConfig",
    "Usage",
    "backend_names",
    "cache_key",
    "create_backend",
    "register_backend",
]
