"""Storage test fixtures: a fault-injecting HTTP proxy in front of the moto S3 server.

The S3 server itself (``s3_endpoint``, ``s3_bucket``) lives in ``tests/conftest.py`` so that other
test directories can use it too.
"""

from __future__ import annotations

import http.client
import random
import socket
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler
from typing import Iterator

import pytest
from hub_standin import LoopbackServer  # this directory is on sys.path (pytest's prepend mode)

FAULTS = ("drop", "stall", "truncate", "error503")

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


class FaultProxy(LoopbackServer):
    """A loopback HTTP proxy that forwards to ``upstream`` and sabotages some responses.

    Faults are injected into requests whose method is in ``methods``:

    - ``drop``: close the connection without answering.
    - ``stall``: answer nothing for ``stall_seconds`` (longer than the client's timeout), then
      close.
    - ``truncate``: send the status, the headers (with the full ``Content-Length``) and half the
      body, then close.
    - ``error503``: answer ``503 SlowDown`` as a throttled S3 would.
    - ``pause`` (scripted only; not a failure): send half the body, wait until :meth:`resume`
      (or ``stall_seconds``), then the rest.

    ``script`` faults are used first, one per eligible request, in order; after that each
    eligible request is sabotaged with probability ``rate`` (seeded) until ``limit`` faults in
    all have been injected. Every count is bounded, and :meth:`stop` ends every thread.
    """

    def __init__(self, upstream: str, *, script: list[str] | None = None, rate: float = 0.0,
                 kinds: tuple[str, ...] = FAULTS, limit: int = 0, seed: int = 0,
                 methods: tuple[str, ...] = ("GET",), stall_seconds: float = 3.0) -> None:
        parsed = urllib.parse.urlsplit(upstream)
        self.upstream = (parsed.hostname, parsed.port)
        self.script = list(script or [])
        self.rate = rate
        self.kinds = kinds
        self.limit = limit + len(self.script)
        self.rng = random.Random(seed)
        self.methods = methods
        self.stall_seconds = stall_seconds
        self.lock = threading.Lock()
        self.requests: dict[str, int] = {}
        self.injected: list[str] = []
        self.stopping = threading.Event()
        self.resumed = threading.Event()
        self.paused = threading.Event()  # set once a paused response has sent its first half
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def _handle(self) -> None:
                proxy._serve(self)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle

        self._start(Handler)

    def count(self, method: str) -> int:
        with self.lock:
            return self.requests.get(method, 0)

    def _choose(self, method: str) -> str | None:
        with self.lock:
            self.requests[method] = self.requests.get(method, 0) + 1
            if method not in self.methods or len(self.injected) >= self.limit:
                return None
            if self.script:
                fault = self.script.pop(0)
            elif self.rng.random() < self.rate:
                fault = self.rng.choice(self.kinds)
            else:
                return None
            if fault == "ok":
                return None
            self.injected.append(fault)
            return fault

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        method = handler.command
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        fault = self._choose(method)
        if fault == "drop":
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault == "stall":
            self.stopping.wait(self.stall_seconds)
            handler.close_connection = True
            return
        if fault == "error503":
            payload = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>SlowDown</Code>"
                       b"<Message>Please reduce your request rate.</Message></Error>")
            handler.send_response(503)
            handler.send_header("Content-Type", "application/xml")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
            return
        conn = http.client.HTTPConnection(*self.upstream, timeout=30)
        try:
            headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_BY_HOP}
            conn.request(method, handler.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            status, reason, resp_headers = resp.status, resp.reason, resp.getheaders()
        finally:
            conn.close()
        handler.send_response(status, reason)
        sent_length = False
        for key, value in resp_headers:
            if key.lower() in _HOP_BY_HOP or key.lower() in ("server", "date"):
                continue
            sent_length |= key.lower() == "content-length"
            handler.send_header(key, value)
        if not sent_length:
            handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if method == "HEAD":
            return
        if fault == "pause" and len(data) > 1:
            handler.wfile.write(data[: len(data) // 2])
            handler.wfile.flush()
            self.paused.set()
            self.resumed.wait(self.stall_seconds)
            handler.wfile.write(data[len(data) // 2:])
            return
        if fault == "truncate" and len(data) > 1:
            handler.wfile.write(data[: len(data) // 2])
            handler.wfile.flush()
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        handler.wfile.write(data)

    def resume(self) -> None:
        """Let paused responses send the rest of their bodies."""
        self.resumed.set()

    def stop(self) -> None:
        self.stopping.set()  # release stalled and paused handlers first
        self.resumed.set()
        super().stop()


@pytest.fixture
def fault_proxy(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """A factory: ``fault_proxy(script=[...], rate=..., ...)`` starts a :class:`FaultProxy` in
    front of the moto server and points ``S3_ENDPOINT_URL`` at it. All are stopped at teardown."""
    from streaming.storage.filesystem import clear_filesystem_cache

    proxies: list[FaultProxy] = []

    def make(**kwargs: object) -> FaultProxy:
        proxy = FaultProxy(s3_endpoint, **kwargs)  # type: ignore[arg-type]
        proxies.append(proxy)
        monkeypatch.setenv("S3_ENDPOINT_URL", proxy.url)
        clear_filesystem_cache()
        return proxy

    yield make
    for proxy in proxies:
        proxy.stop()
    clear_filesystem_cache()


@pytest.fixture
def dead_endpoint(s3_bucket: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """``S3_ENDPOINT_URL`` pointed at a closed port on 127.0.0.1 (connections are refused).

    Depends on ``s3_bucket`` so that the fake credentials are set and this endpoint wins."""
    from streaming.storage.filesystem import clear_filesystem_cache

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    url = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("S3_ENDPOINT_URL", url)
    clear_filesystem_cache()
    return url
