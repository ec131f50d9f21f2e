"""Encode a batch of examples for attribution: ids, baselines, word groups, feature masks.

Baseline (shared by every method)
---------------------------------
The baseline replaces every *content* token (a non-special token that overlaps a canonical
word of a field being explained) by ``[PAD]`` and keeps every other token as it is: special
tokens (``[CLS]``, ``[SEP]``, ``<s>``, ``</s>``), padding, and the rare non-special tokens that
overlap no canonical word (e.g. a lone byte-level ``Ġ`` between two spaces). Because those
kept tokens are identical in input and baseline, their IG attribution is exactly zero and the
word scores add up to ``f(x) - f(baseline)``; in LIME/Shapley they can never be switched off,
so special tokens are excluded from the feature masks (otherwise ``[CLS]`` ranks first).

Position ids
------------
RoBERTa-style models (RoBERTa, MPNet, XLM-R, ...) derive position ids from *which ids are
padding*. A baseline full of ``[PAD]`` ids would then get other position embeddings than the
input, breaking IG's completeness check. For those models the position ids of the real input
are computed here and passed explicitly to every forward call (input, baseline and
perturbations alike).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.models.encoding import accepted_inputs, encode_texts
from engine.text import Alignment, align_tokens, segment

__all__ = ["POSITIONS_FROM_PADDING", "EncodedBatch", "encode_batch"]

#: ``config.model_type`` of models whose position ids are computed from the padding mask.
POSITIONS_FROM_PADDING = frozenset(
    {"roberta", "xlm-roberta", "camembert", "mpnet", "longformer", "data2vec-text", "roberta-prelayernorm", "xmod", "ibert", "luke"}
)


@dataclass
class EncodedBatch:
    """Tensors and word alignments of a batch of examples.

    Attributes
    ----------
    input_ids, attention_mask
        ``(B, L)`` long tensors (padded to the longest example).
    token_type_ids, position_ids
        ``(B, L)`` or ``None`` when the model does not take them (see module notes).
    baseline_ids
        ``(B, L)``: ``input_ids`` with content tokens replaced by the pad id.
    token_group
        ``(B, L)`` int64 numpy array: the example-wide group id of each token (groups of all
        fields numbered consecutively), ``-1`` for non-content tokens.
    n_groups
        Groups per example.
    alignments
        Per example, one :class:`~engine.text.Alignment` per field.
    group_offset
        Per example, the first example-wide group id of each field.
    lengths
        Real (unpadded) length of each example.
    """

    input_ids: Any
    attention_mask: Any
    token_type_ids: Any
    position_ids: Any
    baseline_ids: Any
    token_group: np.ndarray
    n_groups: list[int]
    alignments: list[list[Alignment]]
    group_offset: list[list[int]]
    lengths: list[int]

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def forward_args(self, rows: slice | None = None, length: int | None = None) -> tuple:
        """``(attention_mask, token_type_ids, position_ids)`` for rows ``rows``, cut to ``length`` tokens."""
        rows = rows if rows is not None else slice(None)
        cut = slice(None, length)
        return tuple(None if t is None else t[rows, cut] for t in (self.attention_mask, self.token_type_ids, self.position_ids))

    def feature_mask(self) -> Any:
        """``(B, L)`` long tensor of group ids; non-content tokens get 0.

        Non-content tokens equal their baseline, so assigning them to group 0 changes nothing
        when group 0 is switched off: they are effectively outside every feature.
        """
        import torch

        mask = np.where(self.token_group >= 0, self.token_group, 0)
        return torch.as_tensor(mask, dtype=torch.long, device=self.input_ids.device)

    def first_token_of_group(self, row: int) -> np.ndarray:
        """Index of the first token of each group of example ``row``."""
        groups = self.token_group[row]
        first = np.full(self.n_groups[row], -1, dtype=np.int64)
        for t in range(len(groups) - 1, -1, -1):
            if groups[t] >= 0:
                first[groups[t]] = t
        return first

    def group_scores_from_tokens(self, row: int, token_scores: np.ndarray) -> np.ndarray:
        """Sum token scores per group for example ``row``."""
        groups = self.token_group[row]
        ok = groups >= 0
        return np.bincount(groups[ok], weights=np.asarray(token_scores, dtype=np.float64)[: len(groups)][ok], minlength=self.n_groups[row])


def encode_batch(
    model: Any,
    tokenizer: Any,
    texts: Sequence[Sequence[str]],
    max_length: int,
    *,
    device: Any = None,
) -> EncodedBatch:
    """Tokenize examples with offsets and build everything the methods need.

    Parameters
    ----------
    model
        The classifier (to know which inputs it accepts and how it computes positions).
    tokenizer
        Its fast tokenizer.
    texts
        One tuple of field texts per example (``(text,)`` or ``(premise, hypothesis)``).
    max_length
        Truncation length.
    device
        Where to put the tensors (default: the model's device).
    """
    import torch

    if getattr(tokenizer, "padding_side", "right") != "right":
        tokenizer.padding_side = "right"  # per-example slicing below assumes right padding
    enc = encode_texts(tokenizer, texts, max_length, offsets=True)
    device = device if device is not None else next(model.parameters()).device
    ids = enc["input_ids"]
    special = enc["special_tokens_mask"].numpy().astype(bool)
    offsets = enc["offset_mapping"].numpy()
    pad_id = int(tokenizer.pad_token_id)
    n_fields = len(texts[0]) if texts else 1

    token_group = np.full(ids.shape, -1, dtype=np.int64)
    alignments: list[list[Alignment]] = []
    group_offset: list[list[int]] = []
    n_groups: list[int] = []
    for i, fields in enumerate(texts):
        seq_ids = enc.sequence_ids(i) if n_fields > 1 else None
        row_aligns, row_offsets, total = [], [], 0
        for f, text in enumerate(fields):
            al = align_tokens(
                segment(text), offsets[i], special_mask=special[i], sequence_ids=seq_ids, sequence=f
            )
            sel = al.token_group >= 0
            token_group[i, sel] = al.token_group[sel] + total
            row_aligns.append(al)
            row_offsets.append(total)
            total += al.n_groups
        alignments.append(row_aligns)
        group_offset.append(row_offsets)
        n_groups.append(total)

    content = torch.as_tensor(token_group >= 0)
    baseline = torch.where(content, torch.full_like(ids, pad_id), ids)
    accepted = accepted_inputs(model)
    token_type = enc.get("token_type_ids") if "token_type_ids" in accepted else None
    if token_type is not None and getattr(model.config, "type_vocab_size", 2) < 2:
        token_type = None
    positions = None
    if getattr(model.config, "model_type", "") in POSITIONS_FROM_PADDING and "position_ids" in accepted:
        padding_idx = int(getattr(model.config, "pad_token_id", pad_id))
        not_pad = (ids != padding_idx).long()
        positions = torch.cumsum(not_pad, dim=1) * not_pad + padding_idx
    lengths = enc["attention_mask"].sum(dim=1).tolist()

    def put(t: Any) -> Any:
        return None if t is None else t.to(device)

    return EncodedBatch(
        input_ids=put(ids),
        attention_mask=put(enc["attention_mask"]),
        token_type_ids=put(token_type),
        position_ids=put(positions),
        baseline_ids=put(baseline),
        token_group=token_group,
        n_groups=n_groups,
        alignments=alignments,
        group_offset=group_offset,
        lengths=[int(n) for n in lengths],
    )
