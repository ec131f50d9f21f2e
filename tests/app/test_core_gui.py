"""CORE from the Counterbias tab: method CORE with a corpus and its labelling member retrieves (real MiniLM +
FAISS over IMDb sentences) and edits (loopback LLM) as one job; the review shows the excerpts and keywords."""

from __future__ import annotations

import shutil

from app.main_window import MainWindow
from app.settings import Settings
from engine.counterbias import candidate_rows
from tests.app.test_review_gui import _select_rows
from tests.engine.counterbias.scripted_llm import edit_sentence
from tests.engine.llm.stub_server import StubServer
from tests.engine.retrieval.conftest import labelled_template, models_cache, need_faiss  # noqa: F401


def open_template_copy(qtbot, tmp_path, template, settings=None) -> MainWindow:
    """A shown main window on a copy of the labelled retrieval template (its files folder too), dataset ``cad``."""
    shutil.copy2(template, tmp_path / template.name)
    shutil.copytree(template.with_name(template.stem + "_files"), tmp_path / (template.stem + "_files"))
    win = MainWindow(settings or Settings())
    qtbot.addWidget(win)
    win.resize(1500, 950)
    win.show()
    assert win.open_project(tmp_path / template.name)
    win.select_dataset(win.session.project.dataset("cad").id)
    return win


def _reply(body):
    user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
    return edit_sentence(user.split("\nText: ", 1)[1]) if "\nText: " in user else "CANNOT"


def test_core_generation_from_the_review_tab(qtbot, tmp_path, labelled_template):  # noqa: F811
    need_faiss()
    server = StubServer(reply=_reply).start()
    settings = Settings()
    for key, value in {"backend": "openai", "model": "stub", "base_url": server.base_url, "samples": 1}.items():
        settings.set(f"llm_{key}", value)
    win = open_template_copy(qtbot, tmp_path, labelled_template, settings)
    try:
        panel = win.review_panel
        panel.method.setCurrentIndex(panel.method.findData("core"))
        assert panel.corpus.isVisibleTo(panel) and panel.corpus.currentText() == "imdb"
        assert panel.member.currentText() == "judge"
        _select_rows(win, [0, 1])
        win.show_review_tab()
        ids = win.session.selected_or_current()
        with qtbot.waitSignal(win.jobs.done, timeout=180_000):
            panel.generate_selection.click()
        rows = [r for r in candidate_rows(win.session.project, example_ids=ids) if r["method"] == "core"]
        assert len(rows) == 2, panel.message.text()
        assert "guided by retrieved excerpts" in panel.message.text()
        guided = [r for r in rows if r["status"] != "failed" and r["meta"]["guide"]]
        assert guided
        panel.scope.setCurrentIndex(panel.scope.findData("dataset"))
        panel.select_candidate(guided[0]["id"])
        html = panel.detail.html_source
        assert "Retrieved (CORE)" in html and guided[0]["meta"]["guide"]["keywords"][0] in html
        # the LLM-only baseline from the same tab
        panel.method.setCurrentIndex(panel.method.findData("llm"))
        assert not panel.corpus.isVisibleTo(panel)
        with qtbot.waitSignal(win.jobs.done, timeout=120_000):
            panel.generate_selection.click()
        assert len([r for r in candidate_rows(win.session.project, example_ids=ids) if r["method"] == "llm"]) == 2
    finally:
        win.jobs.wait_for_done(60_000)
        win.close()
        server.close()


def test_corpus_dialog_prepares_a_corpus_as_one_job(qtbot, tmp_path, labelled_template, monkeypatch):  # noqa: F811
    """Corpus… in the Counterbias tab: a file added, labelled by a member and indexed as one job; then chosen."""
    need_faiss()
    from widgets.corpus_dialog import CorpusDialog

    reviews = tmp_path / "more_reviews.txt"
    reviews.write_text("A delightful, clever comedy. I smiled throughout.\nClumsy and dull. A chore to sit through.\n",
                       encoding="utf-8")
    win = open_template_copy(qtbot, tmp_path, labelled_template)
    try:
        panel = win.review_panel
        panel.method.setCurrentIndex(panel.method.findData("core"))
        assert panel.corpus_button.isVisibleTo(panel)
        # the dialog's own checks
        dialog = CorpusDialog(["imdb"], ["judge"])
        qtbot.addWidget(dialog)
        dialog.name.setEditText("new-one")
        assert "choose a file" in dialog.problem_text()
        dialog.name.setEditText("imdb")
        assert dialog.problem_text() == ""                      # an existing corpus: relabel/reindex only
        dialog.path.setText(str(tmp_path / "missing.txt"))
        assert "no file" in dialog.problem_text()
        assert "Train a member" in CorpusDialog([], []).problem_text()

        def accept_with_file(self):
            self.path.setText(str(reviews))
            self.name.setEditText("mine")
            self.kind.setCurrentIndex(self.kind.findData("flat"))
            return CorpusDialog.DialogCode.Accepted

        monkeypatch.setattr(CorpusDialog, "exec", accept_with_file)
        with qtbot.waitSignal(win.jobs.done, timeout=120_000):
            panel.corpus_button.click()
        assert panel.corpus.currentText() == "mine" and panel.member.currentText() == "judge"
        assert "Ready for CORE" in panel.message.text() and "4 sentences" in panel.message.text()
        assert panel.corpus_button.isEnabled()
    finally:
        win.jobs.wait_for_done(60_000)
        win.close()
