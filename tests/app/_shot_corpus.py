"""Not a test: screenshots of the Corpus… dialog and the CORE controls (run explicitly under xvfb).

    SHOT_DIR=/tmp/shots xvfb-run -a -s "-screen 0 1600x1000x24" env -u QT_QPA_PLATFORM \
        .venv/bin/python -m pytest -q -p no:cacheprovider tests/app/_shot_corpus.py
"""

import os
from pathlib import Path

from PySide6.QtCore import QTimer

from tests.app.test_core_gui import open_template_copy
from tests.engine.retrieval.conftest import labelled_template, models_cache, need_faiss  # noqa: F401


def test_shot(qtbot, tmp_path, labelled_template, monkeypatch):  # noqa: F811
    need_faiss()
    from widgets.corpus_dialog import CorpusDialog

    out = Path(os.environ.get("SHOT_DIR", "/tmp/shots"))
    out.mkdir(parents=True, exist_ok=True)
    reviews = tmp_path / "sst_sentences.txt"
    reviews.write_text("A delightful, clever comedy. I smiled throughout.\nClumsy and dull. A chore to sit through.\n"
                       "The score soars and the leads have real chemistry.\n", encoding="utf-8")
    win = open_template_copy(qtbot, tmp_path, labelled_template)
    win.show_review_tab()
    panel = win.review_panel
    panel.method.setCurrentIndex(panel.method.findData("core"))
    real_exec = CorpusDialog.exec

    def exec_with_shot(self):
        self.path.setText(str(reviews))
        self.name.setEditText("sst-sentences")

        def shoot():
            self.grab().save(str(out / "corpus_dialog.png"))
            self.accept()

        QTimer.singleShot(300, shoot)
        return real_exec(self)

    monkeypatch.setattr(CorpusDialog, "exec", exec_with_shot)
    with qtbot.waitSignal(win.jobs.done, timeout=120_000):
        panel.corpus_button.click()
    qtbot.wait(300)
    win.grab().save(str(out / "corpus_ready.png"))
    win.jobs.wait_for_done(60_000)
    win.close()
