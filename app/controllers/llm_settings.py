"""The LLM settings of the Counterbias tab: the stored values, their dialog, the connection test and token usage.

The settings live in the application settings (``llm_*`` keys, never an API key: only the name
of its environment variable); the dialog is non-blocking and its test chat runs as a job whose
answer or named error it shows in place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.controllers.base import PanelController
from app.jobs import Job, JobRunner
from app.session import Session
from engine.llm.base import Usage
from engine.llm.connection import send_test_chat
from widgets.llm_dialog import FIELDS, LLMDialog, config_from_values, usage_text
from widgets.review_panel import ReviewPanel

if TYPE_CHECKING:
    from engine.llm.config import LLMConfig

__all__ = ["LLMSettingsController"]


class LLMSettingsController(PanelController):
    """Stores the LLM settings, opens their dialog, tests the connection and shows the tokens used."""

    panel: ReviewPanel

    def __init__(self, session: Session, jobs: JobRunner, panel: ReviewPanel) -> None:
        super().__init__(session, jobs, panel)
        #: Tokens of the newest generation run of this session (``None``: none yet).
        self.last_usage: Usage | None = None
        self.llm_dialog: LLMDialog | None = None
        #: The newest connection test's answer, or its error.
        self.last_test: Any = None
        panel.llmSettingsRequested.connect(self.open_llm_dialog)
        self._show_llm_summary()

    # ------------------------------------------------------------------ settings
    def llm_values(self) -> dict[str, Any]:
        """The stored LLM settings (keys of :data:`widgets.llm_dialog.FIELDS`)."""
        return {key: self.session.settings.get(f"llm_{key}") for key in FIELDS}

    def set_llm_values(self, values: dict[str, Any]) -> None:
        """Store LLM settings (never a key: ``api_key_env`` is a variable *name*)."""
        for key in FIELDS:
            if key in values:
                self.session.settings.set(f"llm_{key}", values[key])
        self._show_llm_summary()

    def llm_config(self) -> LLMConfig:
        """The :class:`LLMConfig` of the stored settings (raises ``LLMConfigError``)."""
        return config_from_values(self.llm_values())

    def _show_llm_summary(self) -> None:
        values = self.llm_values()
        where = f" @ {values['base_url']}" if values["backend"] == "openai" and values["base_url"] else ""
        self.panel.set_llm_summary(f"LLM: {values['backend']}:{values['model']}{where} · "
                                   f"{values['samples']} sample(s), T={values['temperature']:g}")

    # ------------------------------------------------------------------ dialog and test
    def open_llm_dialog(self) -> LLMDialog:
        """Open the LLM settings dialog (non-blocking); OK stores the values. Returns it (for tests)."""
        dialog = LLMDialog(self.llm_values(), self.panel)
        dialog.testRequested.connect(lambda config: self.test_connection(config, dialog))
        dialog.accepted.connect(lambda: self.set_llm_values(dialog.values()))
        dialog.finished.connect(lambda _: setattr(self, "llm_dialog", None))
        dialog.set_usage(self.last_usage, self.total_usage())
        self.llm_dialog = dialog
        dialog.open()
        return dialog

    def test_connection(self, config: LLMConfig, dialog: LLMDialog | None = None) -> Job:
        """Send one tiny chat with ``config`` as a job; the answer or named error goes to ``dialog``."""

        def done(result: Any) -> None:
            self.last_test = result
            if dialog is not None:
                dialog.show_answer(result.text, result.model, result.usage)

        def failed(exc: BaseException, tb: str) -> None:
            self.last_test = exc
            if dialog is not None:
                dialog.show_failure(exc)

        return self.run_job(send_test_chat, config, title=f"Test LLM {config.backend}:{config.model}",
                            kind="llm-test", when_busy="cancel", busy=dialog.set_busy if dialog is not None else False,
                            done=done, failed=failed, show_errors=False)  # shown in the dialog

    # ------------------------------------------------------------------ tokens
    def total_usage(self) -> Usage:
        """The tokens of every generate and triples run of the project."""
        from engine.counterbias.review import token_usage

        project = self.session.project
        return token_usage(project) if project is not None else Usage()

    def update_tokens(self) -> None:
        """Show the newest run's tokens and the project's total (in the panel and an open dialog)."""
        total = self.total_usage()
        last = f"last run {usage_text(self.last_usage)} · " if self.last_usage is not None else ""
        self.panel.set_tokens(f"Tokens: {last}project total {total.total_tokens:,}")
        self.panel.tokens_label.setToolTip(f"Project total (generate + triples runs): {usage_text(total)}")
        if self.llm_dialog is not None:
            self.llm_dialog.set_usage(self.last_usage, total)
