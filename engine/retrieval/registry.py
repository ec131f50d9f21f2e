"""Registries of the retrieval layer: sentence encoders and FAISS index kinds.

Built-ins are declared by module path (imported on first lookup, see :class:`engine.registry.Registry`);
a trained retriever or another index kind registers under a new name.
"""

from __future__ import annotations

from typing import Any

from engine.registry import Registry
from engine.retrieval.errors import EncoderError, IndexKindError

__all__ = ["ENCODERS", "INDEX_KINDS"]

#: ``name -> factory(**options) -> Encoder`` (see :class:`engine.retrieval.encoders.Encoder`).
ENCODERS: Registry[Any] = Registry(
    "sentence encoder",
    EncoderError,
    builtins={"minilm-l6": "engine.retrieval.encoders:MiniLMEncoder", "trained": "engine.retrieval.dpr:TrainedEncoder"},
)

#: ``name -> IndexKind`` class (see :class:`engine.retrieval.index_kinds.IndexKind`).
INDEX_KINDS: Registry[Any] = Registry(
    "index kind",
    IndexKindError,
    builtins={
        "flat": "engine.retrieval.index_kinds:FlatKind",
        "ivf": "engine.retrieval.index_kinds:IVFKind",
        "ivfpq": "engine.retrieval.index_kinds:IVFPQKind",
        "hnsw": "engine.retrieval.index_kinds:HNSWKind",
    },
)
