"""Options shared by the CLI verbs that build or search a CORE index (``index``, ``retrieve``, ``generate --method core``).

Kept apart from :mod:`engine.cli.retrieval` so that the generate verb can use them without the
two verb modules importing each other.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["check_k_and_diversity", "index_options", "kind_params"]

_INDEX_HELP = ("auto (flat up to 50,000 sentences, else hnsw; an ivf index built by earlier versions' auto is "
               "kept), flat (exact), ivf, ivfpq (compressed, re-ranked exactly; for millions of sentences) or hnsw")


def index_options(g: Any) -> None:
    """Add the encoder and index options to ``g`` (a parser or an argument group)."""
    g.add_argument("--encoder", default="minilm-l6", help="sentence encoder (default minilm-l6; 'trained' needs --retriever)")
    g.add_argument("--retriever", metavar="NAME", help="a retriever trained with train-retriever (implies --encoder trained)")
    g.add_argument("--max-length", type=int, default=64, help="tokens per sentence for the encoder (default 64)")
    g.add_argument("--kind", default="auto", help=_INDEX_HELP)
    g.add_argument("--nlist", type=int, help="ivf: clusters (default about 4·√n)")
    g.add_argument("--nprobe", type=int, help="ivf: clusters searched per query (default nlist/8)")
    g.add_argument("--train-size", type=int, help="ivf: vectors the clustering is trained on (default 64·nlist)")
    g.add_argument("--codes", type=int, help="ivfpq: codes per vector (default 48: 48 bytes a sentence)")
    g.add_argument("--nbits", type=int, help="ivfpq: bits per code (default 8)")
    g.add_argument("--rerank", type=int, help="ivfpq: candidates re-scored exactly per result (default 4)")
    g.add_argument("--m", type=int, help="hnsw: links per node (default 32)")
    g.add_argument("--ef-construction", type=int, help="hnsw: build candidate list (default 80)")
    g.add_argument("--ef-search", type=int, help="hnsw: search candidate list (default 256)")


def kind_params(args: argparse.Namespace) -> dict[str, Any]:
    from engine.retrieval.index import resolve_kind

    kinds_of = {"nlist": ("ivf", "ivfpq"), "nprobe": ("ivf", "ivfpq"), "train_size": ("ivf", "ivfpq"),
                "codes": ("ivfpq",), "nbits": ("ivfpq",), "rerank": ("ivfpq",),
                "m": ("hnsw",), "ef_construction": ("hnsw",), "ef_search": ("hnsw",)}
    kind = args.kind if args.kind != "auto" else None
    params = {}
    for option, kinds in kinds_of.items():
        value = getattr(args, option)
        if value is None:
            continue
        if kind is not None and resolve_kind(kind, 0) not in kinds:
            from engine.retrieval.errors import IndexSettingsError

            raise IndexSettingsError(f"--{option.replace('_', '-')} is a setting of the {' / '.join(kinds)} index, "
                                     f"not of {kind}.", f"Add --kind {kinds[0]}, or drop the option.")
        params[option] = value
    return params


def check_k_and_diversity(args: argparse.Namespace) -> None:
    from engine.retrieval.errors import RetrievalError

    if args.k < 1:
        raise RetrievalError(f"-k {args.k} is not positive.", "Use -k 1 or more.")
    if not 0.0 <= args.diversity <= 1.0:
        raise RetrievalError(f"--diversity {args.diversity:g} is outside [0, 1].",
                             "Use 0 for the nearest excerpts, up to 1 for the most varied.")
