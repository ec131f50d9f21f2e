"""A tiny OpenAI-compatible HTTP server on loopback, with injectable faults (tests, benchmarks).

Raw asyncio, HTTP/1.1 with keep-alive, ``POST /v1/chat/completions`` only (plus
``GET /stats``). A *plan* decides, per request, what the server does; the default answers
every request after ``latency`` seconds with a valid completion whose text is
``reply(body)``. Every request is counted (``server.count``, per body key in
``server.attempts``), so tests can check what was sent.

Behaviours a plan can return: ``"ok"``, ``"500"``, ``"503"``, ``"429"`` (with
``Retry-After``), ``"slow"`` (answers after ``slow_s``), ``"garbage"`` (200 with a body
that is not JSON), ``"bad_json"`` (200, JSON content type, invalid JSON), ``"truncated"``
(headers promise more body than is sent, then the connection closes), ``"length"`` (a
valid completion cut at ``max_tokens``), ``"401"`` (echoes the bearer token back, as
careless servers do), ``"404"``, ``"drip"`` (a valid completion sent one byte every ``drip_s``
seconds, headers included), ``"flood"`` (a valid completion whose text is ``flood_bytes`` long,
sent in 64 KiB chunks without a ``Content-Length``) and ``"flood_length"`` (the same, declared in
``Content-Length``).

Run standalone (used by ``benchmarks/llm_client.py``)::

    python -m tests.engine.llm.stub_server --latency 0.1 --port 0
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

Plan = Callable[[dict[str, Any], int], str]


def default_reply(body: dict[str, Any]) -> str:
    """``<last user message> | was | answered``."""
    last = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"][-1:]
    return f"{(last or [''])[0][:60]} | was | answered"


def body_key(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()[:16]


class StubServer:
    """The server; ``with StubServer(...) as s: ... s.base_url``.

    Parameters
    ----------
    plan
        ``plan(body, attempt) -> behaviour`` (``attempt`` counts from 1 per distinct message list).
    latency
        Seconds before every answer.
    slow_s
        Delay of the ``"slow"`` behaviour.
    retry_after
        Value of the ``Retry-After`` header of ``"429"``.
    retry_after_header
        Name of that header (e.g. ``"retry-after-ms"``).
    reply
        ``reply(body) -> text`` of a successful answer.
    drip_s
        Pause between two bytes of the ``"drip"`` behaviour.
    flood_bytes
        Length of the text of a ``"flood"`` answer.
    usage_extra, extra
        Fields added to a successful answer's ``usage`` and to the answer itself (what some servers send
        beside the OpenAI schema, e.g. llama.cpp's ``timings``).
    """

    def __init__(
        self,
        plan: Plan | None = None,
        *,
        latency: float = 0.0,
        slow_s: float = 2.0,
        retry_after: str = "0.2",
        retry_after_header: str = "Retry-After",
        reply: Callable[[dict[str, Any]], str] = default_reply,
        port: int = 0,
        usage_extra: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
        drip_s: float = 2.0,
        flood_bytes: int = 10_000_000,
    ) -> None:
        self.drip_s = drip_s
        self.flood_bytes = flood_bytes
        self.usage_extra = dict(usage_extra or {})
        self.extra = dict(extra or {})
        self.plan = plan or (lambda body, attempt: "ok")
        self.latency = latency
        self.slow_s = slow_s
        self.retry_after = retry_after
        self.retry_after_header = retry_after_header
        self.reply = reply
        self.port = port
        self.count = 0
        self.attempts: Counter[str] = Counter()
        self.behaviours: list[str] = []
        self.times: list[float] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> StubServer:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", self.port, backlog=1024)
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()
            self._server.close()
            tasks = asyncio.all_tasks(self._loop)
            for task in tasks:
                task.cancel()
            if tasks:
                self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self._loop.close()

        self._thread = threading.Thread(target=run, name="stub-llm-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def close(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ HTTP
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                method, path, _ = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                body_bytes = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                if path.startswith("/stats"):
                    await self._send(writer, 200, json.dumps({"requests": self.count}))
                    continue
                keep = await self._answer(writer, method, path, headers, body_bytes)
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, asyncio.CancelledError):
            return  # client went away, or the server is shutting down
        finally:
            try:
                writer.close()
            except Exception:
                pass

    async def _answer(self, writer, method: str, path: str, headers: dict[str, str], raw: bytes) -> bool:
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            await self._send(writer, 400, json.dumps({"error": {"message": "bad json"}}))
            return True
        key = body_key(body)
        with self._lock:
            self.count += 1
            self.attempts[key] += 1
            attempt = self.attempts[key]
            self.times.append(time.monotonic())
        behaviour = self.plan(body, attempt)
        with self._lock:
            self.behaviours.append(behaviour)
        if self.latency:
            await asyncio.sleep(self.latency)
        if behaviour == "slow":
            await asyncio.sleep(self.slow_s)
            behaviour = "ok"
        if behaviour in ("500", "503"):
            await self._send(writer, int(behaviour), json.dumps({"error": {"message": "injected server error"}}))
        elif behaviour == "429":
            await self._send(writer, 429, json.dumps({"error": {"message": "slow down"}}),
                             extra={self.retry_after_header: self.retry_after})
        elif behaviour == "401":
            auth = headers.get("authorization", "")
            await self._send(writer, 401, json.dumps({"error": {"message": f"invalid key in header {auth!r}"}}))
        elif behaviour == "404":
            await self._send(writer, 404, json.dumps({"error": {"message": f"model {body.get('model')} not found"}}))
        elif behaviour == "garbage":
            await self._send(writer, 200, "<html><body>502 Bad Gateway</body></html>", ctype="text/html")
        elif behaviour == "bad_json":
            await self._send(writer, 200, '{"choices": [{"message": ')
        elif behaviour == "truncated":
            data = self._completion(body, self.reply(body), "stop").encode()
            head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                    "Connection: close\r\n\r\n").encode()
            writer.write(head + data[: len(data) // 2])
            await writer.drain()
            return False
        elif behaviour == "drip":
            data = self._completion(body, self.reply(body), "stop").encode()
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
            for i in range(len(head) + len(data)):
                writer.write((head.encode() + data)[i : i + 1])
                await writer.drain()
                await asyncio.sleep(self.drip_s)
        elif behaviour in ("flood", "flood_length"):
            return await self._flood(writer, body, declared=behaviour == "flood_length")
        elif behaviour == "length":
            text = self.reply(body)
            await self._send(writer, 200, self._completion(body, text[: max(1, len(text) // 2)], "length"))
        else:
            await self._send(writer, 200, self._completion(body, self.reply(body), "stop"))
        return True

    async def _flood(self, writer, body: dict[str, Any], *, declared: bool) -> bool:
        """A valid completion of ``flood_bytes`` of text, in 64 KiB pieces (chunked unless ``declared``)."""
        head, tail = self._completion(body, "\0", "stop").encode().split(b"\\u0000")
        size = len(head) + self.flood_bytes + len(tail)
        framing = f"Content-Length: {size}" if declared else "Transfer-Encoding: chunked"
        writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{framing}\r\n\r\n".encode())
        piece = b"x" * (64 * 1024)  # one piece, sent again and again: the server itself stays small
        parts = [head, *(piece[: min(len(piece), self.flood_bytes - i)] for i in range(0, self.flood_bytes, len(piece))),
                 tail]
        for part in parts:
            writer.write(part if declared else b"%x\r\n%s\r\n" % (len(part), part))
            await writer.drain()
        if not declared:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        return True

    def _completion(self, body: dict[str, Any], text: str, finish: str) -> str:
        prompt = sum(len(m.get("content", "").split()) for m in body.get("messages", []))
        return json.dumps({
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": len(text.split()),
                      "total_tokens": prompt + len(text.split()), **self.usage_extra},
            **self.extra,
        })

    @staticmethod
    async def _send(writer, status: int, text: str, *, ctype: str = "application/json",
                    extra: dict[str, str] | None = None) -> None:
        data = text.encode()
        lines = [f"HTTP/1.1 {status} X", f"Content-Type: {ctype}", f"Content-Length: {len(data)}"]
        lines += [f"{k}: {v}" for k, v in (extra or {}).items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
        await writer.drain()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="OpenAI-compatible stub server on 127.0.0.1")
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--behaviour", default="ok", help="what to answer every request with (ok, 401, 500, ...)")
    args = ap.parse_args(argv)
    server = StubServer(lambda body, attempt: args.behaviour, latency=args.latency, port=args.port).start()
    print(server.port, flush=True)
    try:
        sys.stdin.read()  # runs until stdin closes (the parent exits or closes the pipe)
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
