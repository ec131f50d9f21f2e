"""A small real project for the before/after report: a planted spurious word, candidates, decisions, results.

``spielberg`` occurs only in positive reviews of ``reviews``; six candidates rewrite such reviews
into negative ones that keep the word. Four are accepted, so the augmented version's z of
``spielberg`` for ``pos`` drops. Candidates come from two methods, carry the ensemble judge's
scores (one carries named verdicts instead), one failed to generate, and a tiny tf-idf
evaluation is stored.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from engine.counterbias.review import set_decision
from engine.io import ImportOptions, import_file
from engine.store import ExampleQuery, Project

NOW = "2026-01-01T00:00:00"

POS = [f"spielberg made a {w} film" for w in ("great", "wonderful", "moving", "lovely", "brilliant", "superb",
                                              "fine", "charming")] + \
      [f"a {w} story with good acting" for w in ("great", "warm", "funny", "clever", "sweet", "gentle")]
NEG = [f"a {w} film with bad acting" for w in ("dull", "boring", "awful", "terrible", "weak", "poor", "silly",
                                               "tired", "flat", "lazy", "messy", "bland", "stale", "cheap")]

#: (example index in POS, method, text, status, scores)
CANDIDATES = (
    (0, "coba", "spielberg made a dull film", "accepted",
     {"judge": {"flipped": True, "left_original": True, "target_prob": 0.9}, "spurious_kept": True, "passes": True}),
    (1, "coba", "spielberg made a boring film", "accepted",
     {"judge": {"flipped": True, "left_original": True, "target_prob": 0.8}, "spurious_kept": True, "passes": True}),
    (2, "coba", "spielberg made a weak film", "accepted",
     {"judge": {"flipped": False, "left_original": True, "target_prob": 0.4}, "spurious_kept": True,
      "passes": False}),
    (3, "coba", "made a lovely film", "rejected",
     {"judge": {"flipped": False, "left_original": False, "target_prob": 0.1}, "spurious_kept": False,
      "passes": False}),
    (4, "edit", "spielberg made a flat film", "accepted",
     {"verdicts": {"label_flip": {"status": "pass", "reason": "the ensemble says neg"},
                   "fluency": {"status": "fail", "reason": "reads oddly"}},
      "judge": {"flipped": True, "left_original": True, "target_prob": 0.7}, "spurious_kept": True,
      "passes": True}),
    (5, "edit", "spielberg made a tired film", "proposed",
     {"judge": {"flipped": True, "left_original": True, "target_prob": 0.6}, "spurious_kept": True, "passes": True}),
    (6, "edit", None, "failed", {}),
)


def build_report_project(path: Path, *, evaluate: bool = True) -> Path:
    """Create the project at ``path`` (see the module doc) and return the path."""
    csv_path = path.parent / "reviews.csv"
    csv_path.write_text("text,label\n" + "".join(f"{t},pos\n" for t in POS) + "".join(f"{t},neg\n" for t in NEG),
                        encoding="utf-8")
    with Project.create(path) as project:
        ds = import_file(project, csv_path, options=ImportOptions(name="reviews", split="train")).dataset
        ids = [int(i) for i in project.example_ids(ExampleQuery(ds.id))]

        def add(conn: sqlite3.Connection) -> list[int]:
            run = conn.execute("INSERT INTO runs (kind, dataset_id, started_at, status) VALUES ('generate', ?, ?, "
                               "'done')", (ds.id, NOW)).lastrowid
            out = []
            for index, method, text, _status, scores in CANDIDATES:
                meta = {"original_label": "pos", "generated": {"text": text}, "keep_words": ["spielberg"]}
                out.append(int(conn.execute(
                    "INSERT INTO candidates (run_id, example_id, method, target_label, text, scores, meta, status, "
                    "created_at) VALUES (?, ?, ?, 'neg', ?, ?, ?, ?, ?)",
                    (run, ids[index], method, text, json.dumps(scores), json.dumps(meta),
                     "failed" if text is None else "proposed", NOW)).lastrowid))
            return out

        cids = project.writer.run(add)
        for cid, (_, _, _, status, _) in zip(cids, CANDIDATES):
            if status in ("accepted", "rejected"):
                set_decision(project, cid, status)
        if evaluate:
            from engine.evaluation.classifiers import make_classifier
            from engine.evaluation.conditions import parse_condition
            from engine.evaluation.experiment import run_evaluation
            from engine.evaluation.test_sets import mark_test_set

            test = path.parent / "test.csv"
            test.write_text("text,label\nspielberg made a bad film,neg\na great film,pos\nan awful film,neg\n"
                            "spielberg made a good film,pos\n", encoding="utf-8")
            import_file(project, test, options=ImportOptions(name="heldout", split="test"))
            mark_test_set(project, "heldout", "", "in-domain")
            run_evaluation(project, [parse_condition("original=reviews")], make_classifier("tfidf-lr"), seeds=[0, 1])
    return path
