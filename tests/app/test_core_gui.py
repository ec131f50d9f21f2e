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


def _reply(body):
    user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
    return edit_sentence(user.split("\nText: ", 1)[1]) if "\nText: " in user else "CANNOT"


def test_core_generation_from_the_review_tab(qtbot, tmp_path, labelled_template):  # noqa: F811
    need_faiss()
    src = labelled_template
    shutil.copy2(src, tmp_path / src.name)
    shutil.copytree(src.with_name(src.stem + "_files"), tmp_path / (src.stem + "_files"))
    server = StubServer(reply=_reply).start()
    settings = Settings()
    for key, value in {"backend": "openai", "model": "stub", "base_url": server.base_url, "samples": 1}.items():
        settings.set(f"llm_{key}", value)
    win = MainWindow(settings)
    qtbot.addWidget(win)
    win.resize(1500, 950)
    win.show()
    try:
        assert win.open_project(tmp_path / src.name)
        win.select_dataset(win.session.project.dataset("cad").id)
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
