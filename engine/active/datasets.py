"""The two multi-class sets of the simulation, written as CSV files the importer reads.

``imdb-fine``
    Four-class fine-grained sentiment from the IMDb ratings of Maas et al. (2011): ratings 1-2
    ``very negative``, 3-4 ``negative``, 7-8 ``positive``, 9-10 ``very positive``. The paper
    sampled 495 YELP reviews at random; here ``n`` (default 500) reviews are sampled with a seed,
    an equal number per class (random sampling would leave the classes as unequal as the ratings
    are), and ``<br />`` tags become spaces. ``max_words`` samples among whole reviews of at most
    that many words (IMDb reviews run twice as long as YELP's; a local LLM edits short ones in a
    fraction of the time).
``cad-nli``
    The original SNLI pairs of CAD (Kaushik et al. 2020), three classes. ``mode="hypothesis"``
    writes the hypothesis as the text (a single-text task, as the paper's classifiers read);
    ``mode="pair"`` writes premise and hypothesis. Each row keeps an ``id`` (``train-17``) so that
    its human counterfactuals (``NLI/revised_hypothesis``: two revised hypotheses per pair, one per
    other label) can be attached as stored candidates with :func:`store_cad_counterfactuals`.

Import the files with :func:`engine.io.import_file` (the columns are named as the importer expects).
"""

from __future__ import annotations

import csv
import gzip
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.active.errors import DataBuildError
from engine.io.output import open_output

if TYPE_CHECKING:
    from engine.store import Project

__all__ = ["FINE_LABELS", "build_cad_nli", "build_imdb_fine", "cad_nli_revisions", "fine_label",
           "store_cad_counterfactuals"]

#: Rating ranges of the four fine-grained classes.
FINE_LABELS = {"very negative": (1, 2), "negative": (3, 4), "positive": (7, 8), "very positive": (9, 10)}
_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)


def fine_label(rating: int) -> str | None:
    """The fine-grained class of an IMDb rating (``None`` for 5 and 6, which IMDb leaves out).

    Examples
    --------
    >>> [fine_label(r) for r in (1, 4, 7, 10)]
    ['very negative', 'negative', 'positive', 'very positive']
    """
    for label, (low, high) in FINE_LABELS.items():
        if low <= rating <= high:
            return label
    return None


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", _BR.sub(" ", text)).strip()


def build_imdb_fine(source: str | Path, out: str | Path, *, n: int = 500, seed: int = 0,
                    max_chars: int | None = None, max_words: int | None = None) -> Path:
    """Write a seeded, class-balanced sample of IMDb reviews with four rating classes as CSV.

    Parameters
    ----------
    source
        ``imdb_maas/train.tsv.gz`` (columns ``id``, ``label``, ``rating``, ``text``).
    out
        The CSV to write (columns ``id``, ``text``, ``label``, ``rating``).
    n
        Reviews in all (``n // 4`` per class; the remainder goes to the first classes).
    seed
        The sampling seed.
    max_chars
        Cut longer reviews at a word boundary (``None``: keep them whole).
    max_words
        Sample only among reviews of at most this many words (``None``: any length). Unlike
        ``max_chars`` nothing is cut: each review stays whole.

    Raises
    ------
    DataBuildError
        A missing or unreadable source, or too few reviews of a class.
    """
    source, out = Path(source), Path(out)
    if not source.is_file():
        raise DataBuildError(f"No IMDb file at {source}.", "Point to ../shared/data/imdb_maas/train.tsv.gz.")
    by_class: dict[str, list[tuple[str, str, int]]] = {k: [] for k in FINE_LABELS}
    try:
        opener = gzip.open if source.suffix == ".gz" else open
        with opener(source, "rt", encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                label = fine_label(int(row["rating"]))
                if label is not None and (max_words is None or len(_clean(row["text"]).split()) <= max_words):
                    by_class[label].append((row["id"], row["text"], int(row["rating"])))
    except (OSError, KeyError, ValueError, csv.Error) as exc:
        raise DataBuildError(f"Cannot read {source}: {exc}.", "Use the imdb_maas train.tsv.gz file.") from exc
    rng = np.random.default_rng(seed)
    per = [n // len(FINE_LABELS) + (1 if k < n % len(FINE_LABELS) else 0) for k in range(len(FINE_LABELS))]
    chosen = []
    for (label, rows), k in zip(by_class.items(), per, strict=True):
        if len(rows) < k:
            raise DataBuildError(f"Only {len(rows)} reviews of class {label!r} (wanted {k}).",
                                 "Ask for fewer rows" + (" or allow longer reviews." if max_words else "."))
        for i in sorted(rng.choice(len(rows), size=k, replace=False)):
            rid, text, rating = rows[int(i)]
            text = _clean(text)
            if max_chars and len(text) > max_chars:
                text = text[:max_chars].rsplit(" ", 1)[0]
            chosen.append((rid, text, label, rating))
    order = rng.permutation(len(chosen))
    with open_output(out, newline="", make_parents=True, what="the data file") as f:
        w = csv.writer(f)
        w.writerow(["id", "text", "label", "rating"])
        for i in order:
            w.writerow(chosen[int(i)])
    return out


def _read_tsv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        raise DataBuildError(f"No CAD NLI file at {path}.", "Point to ../shared/data/cad/NLI.")
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def build_cad_nli(cad_nli: str | Path, out: str | Path, *, mode: str = "hypothesis", split: str = "train",
                  n: int | None = 500, seed: int = 0) -> Path:
    """Write the original CAD NLI pairs (a seeded sample of ``n``, or all) as CSV, 3 classes.

    Parameters
    ----------
    cad_nli
        The ``cad/NLI`` folder.
    out
        The CSV to write: ``id``, ``text``, ``label`` (mode ``hypothesis``) or ``id``, ``premise``,
        ``hypothesis``, ``label`` (mode ``pair``).
    mode
        ``"hypothesis"`` or ``"pair"``.
    split
        ``train`` or ``dev`` (the CAD NLI test split is kept apart).
    n, seed
        Sample size (``None``: every row) and its seed.

    Raises
    ------
    DataBuildError
        Unknown mode or split, missing files.
    """
    if mode not in ("hypothesis", "pair"):
        raise DataBuildError(f"Unknown CAD NLI mode {mode!r}.", "Use hypothesis or pair.")
    if split not in ("train", "dev"):
        raise DataBuildError(f"Unknown CAD NLI split {split!r}.", "Use train or dev.")
    rows = _read_tsv(Path(cad_nli) / "original" / f"{split}.tsv")
    keep = list(range(len(rows)))
    if n is not None and n < len(rows):
        keep = sorted(int(i) for i in np.random.default_rng(seed).choice(len(rows), size=n, replace=False))
    out = Path(out)
    with open_output(out, newline="", make_parents=True, what="the data file") as f:
        w = csv.writer(f)
        w.writerow(["id", "text", "label"] if mode == "hypothesis" else ["id", "premise", "hypothesis", "label"])
        for i in keep:
            r = rows[i]
            ident = f"{split}-{i}"
            if mode == "hypothesis":
                w.writerow([ident, r["sentence2"], r["gold_label"]])
            else:
                w.writerow([ident, r["sentence1"], r["sentence2"], r["gold_label"]])
    return out


def cad_nli_revisions(cad_nli: str | Path, split: str = "train") -> dict[str, list[tuple[str, str, str]]]:
    """The human revised hypotheses of each original pair: ``{"train-17": [(premise, hypothesis, label), ...]}``.

    ``revised_hypothesis`` holds two rows per original pair, in the originals' order.
    """
    originals = _read_tsv(Path(cad_nli) / "original" / f"{split}.tsv")
    revised = _read_tsv(Path(cad_nli) / "revised_hypothesis" / f"{split}.tsv")
    if len(revised) != 2 * len(originals):
        raise DataBuildError(f"{len(revised)} revisions for {len(originals)} originals.", "Use the CAD NLI files.")
    out = {}
    for i, o in enumerate(originals):
        pair = revised[2 * i : 2 * i + 2]
        if any(r["sentence1"] != o["sentence1"] for r in pair):
            raise DataBuildError(f"Revision rows {2 * i}, {2 * i + 1} do not follow original {i}.",
                                 "Use the CAD NLI files as published.")
        out[f"{split}-{i}"] = [(r["sentence1"], r["sentence2"], r["gold_label"]) for r in pair]
    return out


def store_cad_counterfactuals(project: Project, dataset: int | str, cad_nli: str | Path, *,
                              splits: Sequence[str] = ("train", "dev"), method: str = "human-cad") -> int:
    """Attach CAD's human revised hypotheses to a CAD NLI dataset's examples as accepted candidates.

    Matches examples by their ``ext_id`` (``train-17``); skips examples that already have
    candidates of ``method``. Returns the number of candidates written.
    """
    from engine.store.schema import now

    info = project.dataset(dataset)
    revisions: dict[str, list[tuple[str, str, str]]] = {}
    for split in splits:
        revisions.update(cad_nli_revisions(cad_nli, split))
    examples = [r for r in project.iter_examples(info.id) if r.get("ext_id") in revisions]
    have = {int(r["example_id"]) for r in project.db.query(
        "SELECT DISTINCT example_id FROM candidates WHERE method = ?", [method])}
    pair = info.task == "pair"

    def write(conn) -> int:
        count = 0
        stamp = now()
        for e in examples:
            if int(e["id"]) in have:
                continue
            for premise, hypothesis, label in revisions[e["ext_id"]]:
                meta = {"mode": method, "original_label": e["label"], "source": "CAD NLI revised_hypothesis",
                        "generated": {"hypothesis" if pair else "text": hypothesis}}
                conn.execute(
                    "INSERT INTO candidates (run_id, example_id, method, target_label, text, premise, hypothesis, "
                    "scores, meta, status, created_at) VALUES (NULL, ?, ?, ?, ?, ?, ?, '{}', ?, 'accepted', ?)",
                    (int(e["id"]), method, label, None if pair else hypothesis, premise if pair else None,
                     hypothesis if pair else None, json.dumps(meta), stamp))
                count += 1
        return count

    return int(project.writer.run(write))
