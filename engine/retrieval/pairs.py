"""Seed pairs for a counterfactual retriever: (query, human counterfactual, query label) read from CAD's paired
files or any CSV/TSV/JSONL table, and the seeded split into training and held-out pairs."""

from __future__ import annotations

import csv
import difflib
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.retrieval.errors import PairsSourceError, TooFewPairsError

__all__ = ["MIN_PAIRS", "Pair", "cad_seed_pairs", "clean_pairs", "read_pairs", "split_pairs"]

#: Fewest pairs a retriever is trained on (and fewest held out by the CLI).
MIN_PAIRS = 4

Pair = tuple[str, str, str | None]


# --------------------------------------------------------------------------------------- pairs
def clean_pairs(pairs: Sequence[Sequence[Any]]) -> list[Pair]:
    """The usable pairs as ``(query, positive, label)``: stripped, an unchanged revision left out."""
    out: list[Pair] = []
    for row in pairs:
        if len(row) < 2:
            raise PairsSourceError("A seed pair needs a query and its counterfactual.",
                                   "Give (query, positive) or (query, positive, label) tuples.")
        query, positive = str(row[0] or "").strip(), str(row[1] or "").strip()
        label = None if len(row) < 3 or row[2] in (None, "") else str(row[2])
        if query and positive and query != positive:  # an unchanged "revision" teaches nothing
            out.append((query, positive, label))
    return out


def _paired_file(path: Path, split: str) -> Path:
    if path.is_file():
        return path
    for sub in ("", "paired", "combined/paired", "sentiment/combined/paired"):
        candidate = path / sub / f"{split}_paired.tsv"
        if candidate.is_file():
            return candidate
    raise PairsSourceError(f"No CAD paired file {split}_paired.tsv under {path}.",
                           "Give the CAD sentiment folder (it holds combined/paired/) or a *_paired.tsv file.")


def cad_seed_pairs(path: str | Path, *, split: str = "train", level: str = "sentence",
                   limit: int | None = None) -> list[Pair]:
    """Seed pairs from CAD sentiment (Kaushik et al.): ``(original, revision, original_label)``.

    CAD's ``combined/paired/<split>_paired.tsv`` holds each original followed by its revision (same
    ``batch_id``, opposite label). Pairs whose texts are identical (label noise) are dropped, and so is
    the known broken ``batch_id`` 18146 of train (its "original" is another review).

    Parameters
    ----------
    path
        The CAD folder (``cad/``, ``cad/sentiment/``, ``.../combined/paired/``) or a paired file.
    split
        ``"train"`` or ``"dev"``.
    level
        ``"sentence"`` (default; CORE queries and indexes sentences): the sentences the annotator
        changed, aligned one to one (spaCy/regex sentences, :func:`engine.text.sentences.split_sentences`),
        each labelled with its review's label; ``"review"``: whole reviews.
    limit
        Stop after this many pairs.

    Raises
    ------
    engine.retrieval.errors.PairsSourceError
        When no paired file is found or it lacks the CAD columns.
    """
    if level not in ("sentence", "review"):
        raise ValueError(f"level must be 'sentence' or 'review', not {level!r}")
    file = _paired_file(Path(path), split)
    with open(file, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    if not rows or [c.strip().lower() for c in rows[0][:3]] != ["sentiment", "text", "batch_id"]:
        raise PairsSourceError(f"{file.name} is not a CAD paired file (columns Sentiment, Text, batch_id).",
                               "Use combined/paired/<split>_paired.tsv of CAD sentiment.")
    out: list[Pair] = []
    body = rows[1:]
    for i in range(0, len(body) - 1, 2):
        original, revision = body[i], body[i + 1]
        if original[2] != revision[2] or original[1] == revision[1] or (split == "train" and original[2] == "18146"):
            continue
        if level == "review":
            out.append((original[1], revision[1], original[0]))
        else:
            out.extend((a, b, original[0]) for a, b in _changed_sentences(original[1], revision[1]))
        if limit is not None and len(out) >= limit:
            return out[:limit]
    return out


def _changed_sentences(original: str, revision: str) -> list[tuple[str, str]]:
    """Sentences of ``original`` that the revision replaced one for one, with their replacements."""
    from engine.text.sentences import split_sentences

    a, b = split_sentences(original), split_sentences(revision)
    pairs = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            pairs.extend((x, y) for x, y in zip(a[i1:i2], b[j1:j2], strict=True) if x.strip() != y.strip())
    return pairs


_QUERY_COLUMNS = ("query", "original", "text", "source", "sentence")
_POSITIVE_COLUMNS = ("positive", "counterfactual", "revision", "revised", "edited", "target_text")
_LABEL_COLUMNS = ("label", "query_label", "original_label", "sentiment")


def _pick(columns: list[str], wanted: str | None, names: Sequence[str]) -> str | None:
    lowered = {c.lower().strip(): c for c in columns}
    if wanted is not None:
        if wanted not in columns and wanted.lower() not in lowered:
            raise PairsSourceError(f"No column {wanted!r} (columns: {', '.join(columns)}).",
                                   "Name an existing column.")
        return wanted if wanted in columns else lowered[wanted.lower()]
    return next((lowered[n] for n in names if n in lowered), None)


def read_pairs(path: str | Path, *, query_column: str | None = None, positive_column: str | None = None,
               label_column: str | None = None, limit: int | None = None) -> list[Pair]:
    """Seed pairs from a file or the CAD folder.

    A folder or a ``*_paired.tsv`` file is read as CAD (:func:`cad_seed_pairs`, sentence level);
    any other CSV/TSV/JSONL needs a query column (``query``, ``original``, ``text``, ...), a
    counterfactual column (``positive``, ``counterfactual``, ``revision``, ...) and may have a
    ``label`` column (the query's label), or exactly two columns (query, counterfactual).

    Raises
    ------
    engine.retrieval.errors.PairsSourceError
        A missing or unreadable file, or columns that cannot be told apart.
    """
    path = Path(path)
    if not path.exists():
        raise PairsSourceError(f"No such file or folder: {path}.",
                               "Give a CSV/TSV/JSONL of (query, counterfactual) pairs or the CAD sentiment folder.")
    if path.is_dir() or path.name.endswith("_paired.tsv"):
        return cad_seed_pairs(path, limit=limit)
    from engine.errors import CounterbiasError
    from engine.io.readers import TableReader

    out: list[Pair] = []
    try:
        with TableReader(path) as reader:
            columns: list[str] | None = None
            q = p = lab = None
            for _row, _line, record in reader.records():
                if columns is None:
                    columns = list(record)
                    q, p = _pick(columns, query_column, _QUERY_COLUMNS), _pick(columns, positive_column,
                                                                               _POSITIVE_COLUMNS)
                    lab = _pick(columns, label_column, _LABEL_COLUMNS)
                    if (q is None or p is None) and len(columns) == 2:
                        q, p = columns
                    if q is None or p is None or q == p:
                        raise PairsSourceError(
                            f"{path.name}: cannot tell the query and counterfactual columns among "
                            f"{', '.join(columns)}.",
                            "Name them query and positive (or original and revision), optionally with label.")
                out.extend(clean_pairs([(record.get(q), record.get(p), record.get(lab) if lab else None)]))
                if limit is not None and len(out) >= limit:
                    break
    except PairsSourceError:
        raise
    except CounterbiasError as exc:
        raise PairsSourceError(f"{path.name} cannot be read as a table: {exc.args[0]}",
                               "Give a CSV, TSV or JSONL file with a header row.") from exc
    return out


def split_pairs(pairs: Sequence[Sequence[Any]], holdout: float, seed: int = 0) -> tuple[list[Pair], list[Pair]]:
    """``(train, held_out)``: a seeded shuffle, ``holdout`` of the pairs held out (at least one each).

    Raises
    ------
    engine.retrieval.errors.TooFewPairsError
        When either part would have fewer than :data:`MIN_PAIRS` pairs.
    """
    clean = clean_pairs(pairs)
    if not 0.0 < holdout < 1.0:
        raise TooFewPairsError(f"--holdout {holdout} is not between 0 and 1.", "Use e.g. --holdout 0.2.")
    order = list(range(len(clean)))
    random.Random(seed).shuffle(order)
    n_out = int(round(len(clean) * holdout))
    if n_out < MIN_PAIRS or len(clean) - n_out < MIN_PAIRS:
        raise TooFewPairsError(
            f"{len(clean)} usable pairs cannot be split into {MIN_PAIRS}+ training and {MIN_PAIRS}+ held-out pairs.",
            "Give more pairs (CAD sentiment has about 9,000 changed sentences) or change --holdout.")
    return [clean[i] for i in order[n_out:]], [clean[i] for i in order[:n_out]]
