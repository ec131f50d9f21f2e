"""LLM client throughput: bounded-concurrency batch vs one-at-a-time, and a cache re-run.

A stub OpenAI-compatible server (``tests/engine/llm/stub_server.py``) runs in its own process
on 127.0.0.1 and answers every chat completion after 100 ms. Through the real ``openai``
backend and the project response cache (``CachedClient`` on a temporary project):

1. concurrent: 1,000 distinct requests at concurrency 64;
2. sequential: concurrency 1, measured on a subset (``--seq-sample``, default 50 distinct
   requests) and extrapolated linearly to 1,000 (printed as such);
3. the 1,000 requests again: every answer comes from the cache; the server's own request
   counter must not move.

Goal: concurrent >= 25x faster than sequential, and 0 requests on the re-run.

Usage: ``python benchmarks/llm_client.py [--requests 1000] [--concurrency 64] [--latency 0.1]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.llm.base import ChatRequest  # noqa: E402
from engine.llm.cache import CachedClient  # noqa: E402
from engine.llm.config import LLMConfig  # noqa: E402
from engine.llm.registry import create_backend  # noqa: E402
from engine.store import Project  # noqa: E402


def requests_for(prefix: str, n: int) -> list[ChatRequest]:
    return [ChatRequest([{"role": "user", "content": f"{prefix} {i}"}]) for i in range(n)]


def server_count(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as resp:
        return int(json.loads(resp.read())["requests"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--seq-sample", type=int, default=50)
    args = ap.parse_args(argv)

    server = subprocess.Popen(
        [sys.executable, "-m", "tests.engine.llm.stub_server", "--latency", str(args.latency), "--port", "0"],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        port = int(server.stdout.readline())
        base_url = f"http://127.0.0.1:{port}/v1"
        with tempfile.TemporaryDirectory() as tmp, Project.create(Path(tmp) / "bench.cbproj") as project:
            def client(concurrency: int) -> CachedClient:
                cfg = LLMConfig(backend="openai", model="stub", base_url=base_url, concurrency=concurrency,
                                timeout_s=30, max_retries=2)
                return CachedClient(create_backend(cfg), project)

            print(f"stub server 127.0.0.1:{port}, {args.latency * 1000:.0f} ms per request; python {sys.version.split()[0]}")
            client(1).chat_many(requests_for("warm-up", 2))  # imports, first connection

            n0 = server_count(port)
            t = time.perf_counter()
            conc = client(args.concurrency).chat_many(requests_for("item", args.requests))
            t_conc = time.perf_counter() - t
            sent_conc = server_count(port) - n0
            assert not conc.failures, conc.failures[:5]

            n0 = server_count(port)
            t = time.perf_counter()
            seq = client(1).chat_many(requests_for("sequential", args.seq_sample))
            t_seq_sample = time.perf_counter() - t
            assert not seq.failures and server_count(port) - n0 == args.seq_sample
            t_seq = t_seq_sample / args.seq_sample * args.requests

            n0 = server_count(port)
            t = time.perf_counter()
            again = client(args.concurrency).chat_many(requests_for("item", args.requests))
            t_cache = time.perf_counter() - t
            sent_cache = server_count(port) - n0

        print(f"concurrent  : {args.requests} requests, concurrency {args.concurrency}: {t_conc:7.2f} s "
              f"({args.requests / t_conc:,.0f} req/s; server counted {sent_conc})")
        print(f"sequential  : {args.seq_sample} requests measured in {t_seq_sample:.2f} s, extrapolated to "
              f"{args.requests}: {t_seq:7.2f} s")
        ratio = t_seq / t_conc
        print(f"speed-up    : {ratio:.1f}x  (goal >= 25x: {'met' if ratio >= 25 else 'NOT met'})")
        print(f"cache re-run: {args.requests} requests in {t_cache:.2f} s, {again.hits} cache hits, "
              f"{sent_cache} requests reached the server (goal 0: {'met' if sent_cache == 0 else 'NOT met'})")
        print(f"tokens      : sent {conc.usage.total_tokens:,} in the concurrent run; the re-run saved "
              f"{again.cached_usage.total_tokens:,}")
        return 0 if ratio >= 25 and sent_cache == 0 else 1
    finally:
        server.stdin.close()
        server.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
