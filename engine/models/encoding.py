"""Tokenize examples for a classifier and pass only the inputs its ``forward`` accepts."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

__all__ = ["accepted_inputs", "encode_texts", "model_inputs"]


def encode_texts(
    tokenizer: Any,
    texts: Sequence[Sequence[str]],
    max_length: int,
    *,
    padding: bool | str = True,
    offsets: bool = False,
    return_tensors: str | None = "pt",
) -> Any:
    """Tokenize one- or two-field examples.

    Parameters
    ----------
    tokenizer
        A fast tokenizer.
    texts
        One tuple per example: ``(text,)`` or ``(premise, hypothesis)``.
    max_length
        Truncation length (pairs truncate the longer text first).
    padding
        Passed to the tokenizer (``True``: pad to the longest in the batch).
    offsets
        Also return ``offset_mapping`` and ``special_tokens_mask``.
    return_tensors
        ``"pt"`` or ``None`` for lists.
    """
    n_fields = len(texts[0]) if texts else 1
    first = [t[0] for t in texts]
    second = [t[1] for t in texts] if n_fields == 2 else None
    return tokenizer(
        first,
        second,
        truncation=True,
        max_length=max_length,
        padding=padding,
        return_offsets_mapping=offsets,
        return_special_tokens_mask=offsets,
        return_tensors=return_tensors,
    )


def accepted_inputs(model: Any) -> frozenset[str]:
    """Names of the keyword arguments ``model.forward`` takes."""
    cached = getattr(model, "_cb_accepted_inputs", None)
    if cached is None:
        cached = frozenset(inspect.signature(model.forward).parameters)
        try:
            model._cb_accepted_inputs = cached
        except AttributeError:
            pass
    return cached


def model_inputs(model: Any, batch: Any) -> dict[str, Any]:
    """The entries of a tokenizer batch that ``model.forward`` accepts.

    ``token_type_ids`` is dropped for models whose config has no token types (e.g.
    DistilBERT, or a RoBERTa with ``type_vocab_size`` 1).
    """
    keep = accepted_inputs(model)
    out = {k: v for k, v in batch.items() if k in keep and k in ("input_ids", "attention_mask", "token_type_ids")}
    if "token_type_ids" in out and getattr(model.config, "type_vocab_size", 2) < 2:
        out.pop("token_type_ids")
    return out
