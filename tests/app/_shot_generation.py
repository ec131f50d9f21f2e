"""Not a test: a screenshot of a generation job in flight (run explicitly under xvfb, see the closing note)."""

import os
import shutil

from PySide6.QtCore import QItemSelection, QItemSelectionModel

from app.main_window import MainWindow
from app.settings import Settings
from tests.engine.counterbias.conftest import voted_project_template  # noqa: F401
from tests.engine.counterbias.scripted_llm import scripted_reply
from tests.engine.llm.stub_server import StubServer


def test_shot(qtbot, tmp_path, voted_project_template):  # noqa: F811
    server = StubServer(reply=scripted_reply, latency=float(os.environ.get("SHOT_LATENCY", "1.5"))).start()
    src = voted_project_template
    shutil.copy(src, tmp_path / src.name)
    shutil.copytree(src.parent / f"{src.stem}_files", tmp_path / f"{src.stem}_files")
    win = MainWindow(Settings())
    qtbot.addWidget(win)
    win.resize(1500, 950)
    win.show()
    assert win.open_project(tmp_path / src.name)
    dialog = win.review.open_llm_dialog()
    dialog.backend.setCurrentIndex(dialog.backend.findData("openai"))
    dialog.model.setCurrentText("stub")
    dialog.base_url.setText(server.base_url)
    dialog.api_key_env.setText("")
    dialog.concurrency.setValue(int(os.environ.get("SHOT_CONCURRENCY", "1")))  # batches of 4: the rate shows early
    dialog.accept()
    table = win.examples.table
    model = table.model()
    sel = QItemSelection()
    sel.select(model.index(0, 0), model.index(model.rowCount() - 1, model.columnCount() - 1))
    table.selectionModel().select(sel, QItemSelectionModel.SelectionFlag.ClearAndSelect
                                  | QItemSelectionModel.SelectionFlag.Rows)
    win.show_review_tab()
    seen = []
    win.jobs.progressed.connect(lambda job, fraction, message: seen.append(message))
    win.review_panel.generate_selection.click()
    # the moment the job first reports its rate, let the panel repaint, then grab
    qtbot.waitUntil(lambda: any("/min" in m for m in seen), timeout=300_000)
    qtbot.wait(150)
    win.grab().save(os.environ.get("SHOT_PATH", "/tmp/shots/generation.png"))
    win.jobs.cancel_all() if hasattr(win.jobs, "cancel_all") else None
    win.jobs.wait_for_done(120_000)
    win.close()
    server.close()
