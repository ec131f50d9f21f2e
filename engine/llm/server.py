"""Serve a bundled model over a real OpenAI-compatible HTTP API on loopback.

This is llama.cpp's own HTTP server, run in-process through ``xllamacpp`` (it answers
``POST /v1/chat/completions`` and ``GET /v1/models``). It lets other tools, or the
``openai`` backend, use the bundled models; the test-suite uses it as a real endpoint.

Use :func:`start_local_server` from Python, or the command line::

    python -m engine serve-llm --model qwen2.5-coder-1.5b --port 8080
    python -m engine.llm.server --model smollm2-135m --port 0   # same, without the CLI hook

It listens on loopback addresses only (127.0.0.1, ::1 or localhost).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.errors import EXIT_OK, EXIT_USER_ERROR, CounterbiasError
from engine.llm.config import check_local_options
from engine.llm.errors import LLMConfigError
from engine.llm.gguf import MODELS, get_spec, model_path
from engine.llm.local_backend import DEFAULT_N_CTX, default_threads, load_server

LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass
class LocalServer:
    """A running server; stop it with :meth:`close` (or a ``with`` block).

    Attributes
    ----------
    base_url
        The address to give an OpenAI client, ending in ``/v1``.
    address
        ``http://host:port`` as the server reports it.
    model
        The bundled model's name (also the name ``/v1/models`` lists).
    """

    base_url: str
    address: str
    model: str
    _server: Any = field(repr=False, default=None)

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    def close(self) -> None:
        """Stop listening and free the model (waits for the server loop to exit)."""
        self._server = None

    @property
    def running(self) -> bool:
        return self._server is not None

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_local_server(
    model: str = "smollm2-135m",
    port: int = 0,
    *,
    host: str = "127.0.0.1",
    n_ctx: int = DEFAULT_N_CTX,
    n_threads: int | None = None,
    n_parallel: int = 1,
    api_key: str | None = None,
) -> LocalServer:
    """Load bundled ``model`` and serve it over HTTP on ``host:port``.

    Parameters
    ----------
    model
        A name from :data:`engine.llm.gguf.MODELS`.
    port
        TCP port; 0 picks a free one (read it from the result).
    host
        A loopback address.
    n_ctx, n_threads
        Context length (per slot) and CPU threads.
    n_parallel
        Slots: requests the server decodes together (continuous batching); set clients'
        concurrency to it.
    api_key
        If given, the server requires it as a bearer token.

    Raises
    ------
    LLMConfigError
        ``host`` is not a loopback address.
    ModelNotFoundError, ModelFileError, RuntimeMissingError
    """
    if host not in LOOPBACK:
        raise LLMConfigError(
            f"The model server listens on loopback only, not {host!r}.", "Use 127.0.0.1 (or ::1)."
        )
    spec = get_spec(model)
    path = model_path(spec.name)
    server = load_server(
        path, n_ctx=n_ctx, n_threads=n_threads, n_parallel=max(1, int(n_parallel)), alias=spec.name,
        port=int(port), host=host, api_key=api_key,
    )
    address = str(server.listening_address).rstrip("/")
    return LocalServer(base_url=f"{address}/v1", address=address, model=spec.name, _server=server)


def build_parser() -> argparse.ArgumentParser:
    """Arguments of ``serve-llm`` (shared by the CLI hook and ``python -m engine.llm.server``)."""
    p = argparse.ArgumentParser(
        prog="serve-llm",
        description="Serve a bundled model over an OpenAI-compatible HTTP API on loopback.",
    )
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``serve-llm``'s options to ``p`` (for wiring it into another parser)."""
    p.add_argument("--model", default="qwen2.5-coder-1.5b", choices=sorted(MODELS), help="bundled model to serve")
    p.add_argument("--port", type=int, default=8080, help="TCP port (0: any free port; default 8080)")
    p.add_argument("--host", default="127.0.0.1", choices=LOOPBACK, help="loopback address to listen on")
    p.add_argument("--ctx", type=int, default=DEFAULT_N_CTX, help=f"context length (default {DEFAULT_N_CTX})")
    p.add_argument("--threads", type=int, default=None, help=f"CPU threads (default {default_threads()})")
    p.add_argument("--slots", type=int, default=1,
                   help="parallel slots, decoded together (default 1; give clients this --concurrency)")
    p.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="require the key held in environment variable VAR from clients",
    )


def serve(args: argparse.Namespace, *, stop: threading.Event | None = None) -> int:
    """Run the server described by parsed ``args`` until Ctrl+C, SIGTERM or ``stop`` is set."""
    check_local_options({"n_parallel": getattr(args, "slots", 1), "n_threads": args.threads, "n_ctx": args.ctx})
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise LLMConfigError(
                f"Environment variable {args.api_key_env} is not set.", f"Set it, e.g. 'export {args.api_key_env}=...'."
            )
    stop = stop or threading.Event()
    print(f"loading {args.model} ...", file=sys.stderr, flush=True)
    server = start_local_server(
        args.model, args.port, host=args.host, n_ctx=args.ctx, n_threads=args.threads,
        n_parallel=getattr(args, "slots", 1), api_key=api_key,
    )
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
    try:
        print(f"serving {server.model} at {server.base_url}  (OpenAI-compatible; Ctrl+C to stop)", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        server.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("stopped", file=sys.stderr, flush=True)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``serve-llm``: parse ``argv``, serve until interrupted, return an exit code."""
    args = build_parser().parse_args(argv)
    try:
        return serve(args)
    except CounterbiasError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
