"""The connection test of the LLM settings: one tiny chat with a configuration."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.progress import no_progress

if TYPE_CHECKING:
    from engine.llm.base import ChatResult
    from engine.llm.config import LLMConfig
    from engine.progress import CancelToken, ProgressFn

__all__ = ["TEST_PROMPT", "send_test_chat"]

#: The message of the connection test (answered in a word or two by any chat model).
TEST_PROMPT = "Reply with the single word: ready"


def send_test_chat(
    config: LLMConfig,
    *,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> ChatResult:
    """Send :data:`TEST_PROMPT` with ``config`` and return the answer.

    Parameters
    ----------
    config
        The backend, model and endpoint to test.

    Returns
    -------
    ChatResult
        The answer (text, model that answered, token usage).

    Raises
    ------
    LLMError
        The named error of the backend (unreachable, authentication, unknown model, …).
    """
    from engine.llm.registry import create_backend

    if cancel is not None:
        cancel.raise_if_cancelled()
    (progress or no_progress)(0.1, f"test chat to {config.backend}:{config.model}")
    backend = create_backend(config)
    try:
        return backend.chat([{"role": "user", "content": TEST_PROMPT}], {"max_tokens": 8, "temperature": 0.0})
    finally:
        backend.close()
