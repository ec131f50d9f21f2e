"""Not a test: screenshots of the Counterbias tab (a candidate with its demonstrations and the human counterfactual)
and of the LLM dialog, at 1366×768 (run explicitly: ``pytest tests/app/_shot_demos.py``; PNGs in $SHOT_DIR)."""

import os
import shutil
from pathlib import Path

from PySide6.QtCore import QItemSelection, QItemSelectionModel

from app.main_window import MainWindow
from app.settings import Settings
from engine.generation.demo_pairs import import_pairs
from tests.engine.counterbias.conftest import voted_project_template  # noqa: F401
from tests.engine.counterbias.scripted_llm import scripted_reply
from tests.engine.llm.stub_server import StubServer


def test_shot(qtbot, tmp_path, voted_project_template):  # noqa: F811
    out = Path(os.environ.get("SHOT_DIR", tmp_path))
    server = StubServer(reply=scripted_reply).start()
    src = voted_project_template
    shutil.copy(src, tmp_path / src.name)
    shutil.copytree(src.parent / f"{src.stem}_files", tmp_path / f"{src.stem}_files")
    win = MainWindow(Settings())
    qtbot.addWidget(win)
    win.resize(1366, 768)
    win.show()
    assert win.open_project(tmp_path / src.name)
    project, dataset = win.session.project, win.current_dataset
    rows = list(project.iter_examples(dataset.id))[:3]
    pairs = tmp_path / "pairs.tsv"
    lines = ["Sentiment\tText\tbatch_id"]
    for n, r in enumerate(rows):
        other = "Negative" if r["label"] == "Positive" else "Positive"
        lines += [f"{r['label']}\t{r['text']}\t{n}", f"{other}\t{r['text'].replace('good', 'bad').replace('love', 'hate')} "
                  f"(revised)\t{n}"]
    lines += ["Positive\tThe acting is great and the story moving.\t9", "Negative\tThe acting is poor and the story "
              "dull.\t9", "Negative\tI hated every minute of it.\t10", "Positive\tI loved every minute of it.\t10"]
    pairs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    import_pairs(project, dataset.id, pairs, text_column="Text", label_column="Sentiment", group_column="batch_id")
    dialog = win.review.open_llm_dialog()
    dialog.backend.setCurrentIndex(dialog.backend.findData("openai"))
    dialog.model.setCurrentText("stub")
    dialog.base_url.setText(server.base_url)
    dialog.api_key_env.setText("")
    qtbot.wait(300)
    dialog.grab().save(str(out / "llm_dialog.png"))
    dialog.accept()
    table = win.examples.table
    selection = QItemSelection()
    model = table.model()
    for r in range(3):
        selection.select(model.index(r, 0), model.index(r, model.columnCount() - 1))
    table.selectionModel().select(selection, QItemSelectionModel.SelectionFlag.ClearAndSelect
                                  | QItemSelectionModel.SelectionFlag.Rows)
    win.show_review_tab()
    with qtbot.waitSignal(win.jobs.done, timeout=120_000):
        win.review_panel.generate_selection.click()
    qtbot.wait(500)
    win.grab().save(str(out / "counterbias_tab.png"))
    server.close()
