"""Pattern synthesis: patterns that match many examples of one label and few of the others.

From labelled examples, :func:`synthesize` builds candidate elements out of the words of the
label's examples (the word, its forms ``[lemma]``, its part of speech, its entity type and,
with a soft matcher, ``(lemma)``), keeps those that occur in enough of them, and grows
sequences by beam search: each step appends an element directly (``+e``) or after a gap
(``+*+e``) to the best patterns so far. Patterns are scored on every example (precision and
recall for the label, F1 to rank). Finally, alternatives are joined with ``|`` while that adds
examples of the label and keeps the precision. The evaluation uses the matcher's exact
semantics (``*`` is any run of words, ``+`` joins consecutive words, punctuation is skipped), so
a synthesized pattern matches exactly the examples it was scored on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.patterns.errors import PatternError
from engine.patterns.soft import SoftMatcher, make_soft_matcher
from engine.patterns.scores import ScoredPattern, score_hits
from engine.patterns.syntax import ENTITY_TYPES, Element
from engine.patterns.tokens import Analysis, analyse_many
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress

__all__ = ["ScoredPattern", "score_pattern", "synthesize", "synthesize_dataset"]

#: Parts of speech whose words give ``[lemma]`` and ``(lemma)`` elements.
CONTENT_POS = frozenset({"NOUN", "VERB", "ADJ", "ADV", "PROPN", "INTJ"})
#: Parts of speech never used as elements on their own (too common to tell labels apart).
_SKIP_POS = frozenset({"PUNCT", "SPACE", "X", "SYM"})
#: spaCy entity label -> the ``$TYPE`` used in patterns.
_ENTITY_NAME = {label: name for name, labels in ENTITY_TYPES.items() if len(labels) == 1
                for label in labels} | {"GPE": "LOCATION", "LOC": "LOCATION", "FAC": "LOCATION"}


# Positions of a text where an element holds: {start word index: end word index (exclusive)}.
Positions = dict[int, int]


class _Index:
    """Where each candidate element holds, per text."""

    def __init__(self, analyses: Sequence[Analysis], soft: SoftMatcher | None, soft_heads: Sequence[str]) -> None:
        self.n = len(analyses)
        self.holds: dict[Element, dict[int, Positions]] = {}
        related: dict[str, set[str]] = {}
        if soft is not None and soft_heads:
            vocabulary = sorted({w.lemma for a in analyses for w in a.words})
            for head in soft_heads:
                related[head] = soft.related(head, vocabulary) | {head}
        for t, analysis in enumerate(analyses):
            for i, word in enumerate(analysis.words):
                elements = [Element("word", word.lower.replace("’", "'"))]
                if word.pos and word.pos not in _SKIP_POS:
                    elements.append(Element("pos", word.pos))
                if word.pos in CONTENT_POS or not analysis.tagged:
                    elements.append(Element("stem", word.lemma))
                for head, words in related.items():
                    if word.lemma in words:
                        elements.append(Element("soft", head))
                for element in elements:
                    self.holds.setdefault(element, {}).setdefault(t, {})[i] = i + 1
                if word.entity and word.entity in _ENTITY_NAME:
                    self.holds.setdefault(Element("entity", _ENTITY_NAME[word.entity]), {}).setdefault(t, {})[i] = (
                        max(i + 1, word.entity_end))

    def extend(self, ends: dict[int, set[int]], element: Element, gap: bool) -> dict[int, set[int]]:
        """Match ends after appending ``element`` (after any gap when ``gap``) to a pattern with ``ends``."""
        table = self.holds.get(element, {})
        out: dict[int, set[int]] = {}
        for t, positions in ends.items():
            here = table.get(t)
            if not here:
                continue
            if gap:
                first = min(positions)
                found = {end for start, end in here.items() if start >= first}
            else:
                found = {here[p] for p in positions if p in here}
            if found:
                out[t] = found
        return out

    def start(self, element: Element) -> dict[int, set[int]]:
        return {t: set(positions.values()) for t, positions in self.holds.get(element, {}).items()}


def score_pattern(pattern: str, texts: Sequence[str], labels: Sequence[str], label: str,
                  soft: SoftMatcher | str = "embedding") -> ScoredPattern:
    """Precision, recall and F1 of an (analyst's) pattern for ``label`` on labelled texts."""
    from engine.patterns.match import Matcher

    hits = Matcher(soft).match_many(pattern, texts)
    is_label = np.array([lab == label for lab in labels])
    precision, recall, f1, matched, hit = score_hits({i for i, h in enumerate(hits) if h is not None}, is_label,
                                                 int(is_label.sum()))
    return ScoredPattern(pattern, label, precision, recall, f1, matched, hit)


def synthesize(
    texts: Sequence[str],
    labels: Sequence[str],
    label: str,
    *,
    max_elements: int = 3,
    beam: int = 30,
    top: int = 10,
    min_support: int | None = None,
    min_precision: float = 0.6,
    max_alternatives: int = 3,
    soft: SoftMatcher | str | None = None,
    soft_heads: int = 30,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> list[ScoredPattern]:
    """Search patterns that pick out ``label`` among labelled ``texts``.

    Parameters
    ----------
    texts, labels
        The labelled examples (the analyst's annotations).
    label
        The label the patterns should stand for.
    max_elements
        Longest sequence, not counting ``*``.
    beam
        Patterns kept at each step of the search.
    top
        Patterns returned.
    min_support
        Examples of ``label`` an element or pattern must match to be considered (default:
        2, or 5% of the label's examples when there are more than 40).
    min_precision
        Patterns below it are not returned and not joined into alternatives.
    max_alternatives
        Most alternatives joined with ``|`` into one pattern.
    soft, soft_heads
        A soft matcher (or its name) to add ``(lemma)`` elements for the ``soft_heads`` most
        frequent content lemmas of the label; ``None``: no soft elements.

    Returns
    -------
    list of ScoredPattern
        Best first (F1, then precision, then fewer elements).

    Raises
    ------
    PatternError
        When no example has ``label`` or the lengths differ.
    """
    cancel = ensure_token(cancel)
    if len(texts) != len(labels):
        raise PatternError(f"{len(texts)} texts but {len(labels)} labels.", "Give one label per text.")
    is_label = np.array([lab == label for lab in labels])
    n_label = int(is_label.sum())
    if n_label == 0:
        raise PatternError(f"No example has the label {label!r}.", "Label some examples with it first.")
    support = min_support if min_support is not None else (max(2, round(0.05 * n_label)) if n_label > 40 else 2)
    support = min(support, n_label)
    progress(0.0, "reading the examples")
    analyses = analyse_many(list(texts))
    cancel.raise_if_cancelled()
    matcher = make_soft_matcher(soft) if isinstance(soft, str) else soft
    heads: list[str] = []
    if matcher is not None:
        counts = Counter(w.lemma for t, a in enumerate(analyses) if is_label[t]
                         for w in {w.lemma: w for w in a.words if w.pos in CONTENT_POS or not a.tagged}.values())
        heads = [w for w, _ in counts.most_common(soft_heads)]
    index = _Index(analyses, matcher, heads)
    progress(0.2, "searching patterns")

    def label_support(ends: dict[int, set[int]]) -> int:
        return sum(1 for t in ends if is_label[t])

    elements = [e for e in index.holds if label_support(index.start(e)) >= support]
    scored: dict[str, tuple[tuple[float, float, float, int, int], frozenset[int], int]] = {}

    def consider(spec: str, ends: dict[int, set[int]], size: int) -> None:
        texts_hit = frozenset(ends)
        scored[spec] = (score_hits(set(texts_hit), is_label, n_label), texts_hit, size)

    frontier: list[tuple[str, dict[int, set[int]], int]] = []
    for element in elements:
        ends = index.start(element)
        consider(element.spec, ends, 1)
        frontier.append((element.spec, ends, 1))
    for step in range(1, max_elements):
        cancel.raise_if_cancelled()
        frontier.sort(key=lambda f: (-scored[f[0]][0][2], -scored[f[0]][0][0], f[2], f[0]))
        # Extend the best patterns, and the most frequent (general) ones that lead to specific sequences.
        keep = frontier[:beam] + sorted(frontier, key=lambda f: -label_support(f[1]))[: beam // 3]
        seen: set[str] = set()
        grown: list[tuple[str, dict[int, set[int]], int]] = []
        for spec, ends, size in keep:
            if spec in seen or scored[spec][0][0] >= 1.0 and size > 1:
                continue
            seen.add(spec)
            for element in elements:
                for gap in (False, True):
                    new_ends = index.extend(ends, element, gap)
                    if label_support(new_ends) < support:
                        continue
                    new_spec = f"{spec}+*+{element.spec}" if gap else f"{spec}+{element.spec}"
                    if new_spec not in scored:
                        consider(new_spec, new_ends, size + 1)
                        grown.append((new_spec, new_ends, size + 1))
        frontier = grown
        progress(0.2 + 0.6 * step / max(1, max_elements - 1), f"searched {len(scored):,} patterns")
    ranked = sorted(scored.items(), key=lambda kv: (-kv[1][0][2], -kv[1][0][0], kv[1][2], len(kv[0]), kv[0]))
    # One pattern per set of matched examples (the shortest), above the precision floor.
    distinct: list[tuple[str, tuple[float, float, float, int, int], frozenset[int]]] = []
    seen_sets: set[frozenset[int]] = set()
    for spec, (score, hit, _size) in ranked:
        if score[0] < min_precision or hit in seen_sets:
            continue
        seen_sets.add(hit)
        distinct.append((spec, score, hit))
    results = [ScoredPattern(spec, label, *score) for spec, score, _ in distinct]
    results += _alternatives(distinct, label, is_label, n_label, min_precision, max_alternatives)
    results.sort(key=lambda s: (-s.f1, -s.precision, s.pattern.count("+") + s.pattern.count("|"), s.pattern))
    progress(1.0, f"{len(results[:top])} patterns for {label!r}")
    return results[:top]


def _alternatives(distinct: Sequence[tuple[str, tuple[float, float, float, int, int], frozenset[int]]], label: str,
                  is_label: np.ndarray, n_label: int, min_precision: float, max_alternatives: int) -> list[ScoredPattern]:
    """Greedy ``|`` joins of the best patterns while each adds examples of the label and keeps the precision."""
    out: list[ScoredPattern] = []
    known = {hit for _, _, hit in distinct}
    pool = list(distinct[:50])
    for first, _score0, hit in pool[:5]:
        parts, covered = [first], set(hit)
        while len(parts) < max_alternatives:
            best = None
            for spec, _s, other in pool:
                if spec in parts:
                    continue
                union = covered | other
                score = score_hits(union, is_label, n_label)
                gained = sum(1 for t in other - covered if is_label[t])
                if gained and score[0] >= min_precision and (best is None or score[2] > best[1][2]):
                    best = (spec, score, union)
            if best is None or best[1][2] <= score_hits(covered, is_label, n_label)[2]:
                break
            parts.append(best[0])
            covered = best[2]
        if len(parts) > 1 and frozenset(covered) not in known:
            known.add(frozenset(covered))
            out.append(ScoredPattern("|".join(parts), label, *score_hits(covered, is_label, n_label)))
    return out


def synthesize_dataset(
    project: Any,
    dataset_id: int,
    example_ids: Sequence[int] | None = None,
    *,
    labels: Sequence[str] | None = None,
    field: str = "text",
    store: bool = True,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
    **options: Any,
) -> dict[str, list[ScoredPattern]]:
    """:func:`synthesize` for each label of a dataset's examples; stored in the project.

    Parameters
    ----------
    example_ids
        The labelled examples to learn from (default: all of the dataset).
    labels
        Labels to find patterns for (default: every label of the dataset).
    field
        ``text``, or ``hypothesis``/``premise`` of a pair dataset.
    store
        Store the patterns (replacing the last synthesis for these labels; the analyst's stay).
    options
        Passed to :func:`synthesize` (``soft`` by name, so it is recorded).
    """
    from engine.patterns.store import store_patterns
    from engine.progress import scaled

    cancel = ensure_token(cancel)
    dataset = project.dataset(dataset_id)
    rows = (list(project.iter_examples(dataset.id)) if example_ids is None
            else project.examples([int(i) for i in example_ids]))
    rows = [r for r in rows if r.get(field) and r.get("label") is not None]
    if not rows:
        raise PatternError(f"Dataset {dataset.name!r} has no labelled {field} to learn patterns from.",
                           "Import labelled examples, or pick another field (--field hypothesis for pairs).")
    texts, gold = [str(r[field]) for r in rows], [str(r["label"]) for r in rows]
    wanted = list(labels) if labels else [lab for lab in dataset.labels if lab in set(gold)]
    out: dict[str, list[ScoredPattern]] = {}
    for n, label in enumerate(wanted):
        cancel.raise_if_cancelled()
        out[label] = synthesize(texts, gold, label, progress=scaled(progress, n / len(wanted), (n + 1) / len(wanted)),
                                cancel=cancel, **options)
        if store:
            params = {"field": field, "examples": len(rows),
                      **{k: v for k, v in options.items() if isinstance(v, str | int | float | type(None))}}
            store_patterns(project, dataset.id, out[label], params=params, replace=True)
    return out
