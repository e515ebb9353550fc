"""Storage test fixtures: a fault-injecting HTTP proxy in front of the moto S3 server; GCS and
Azure Blob Storage emulators (gcp-storage-emulator and Azurite), a plain web server and an SFTP
server, all on 127.0.0.1.

The S3 server itself (``s3_endpoint``, ``s3_bucket``) lives in ``tests/conftest.py`` so that other
test directories can use it too.
"""

from __future__ import annotations

import http.client
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler
from typing import Callable, Iterator

import pytest
from hub_standin import LoopbackServer  # this directory is on sys.path (pytest's prepend mode)
from loopback_stores import Cloud

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


def _proxies(endpoint: str,
             point_at: Callable[[str], None]) -> Iterator[Callable[..., FaultProxy]]:
    """Yield a factory of :class:`FaultProxy` instances in front of ``endpoint``, each pointed at
    with ``point_at``; stop them all afterwards."""
    proxies: list[FaultProxy] = []

    def make(**kwargs: object) -> FaultProxy:
        proxy = FaultProxy(endpoint, **kwargs)  # type: ignore[arg-type]
        proxies.append(proxy)
        point_at(proxy.url)
        return proxy

    yield make
    for proxy in proxies:
        proxy.stop()


@pytest.fixture
def fault_proxy(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """A factory: ``fault_proxy(script=[...], rate=..., ...)`` starts a :class:`FaultProxy` in
    front of the moto server and points ``S3_ENDPOINT_URL`` at it. All are stopped at teardown."""
    from streaming.storage.filesystem import clear_filesystem_cache

    def point_at(url: str) -> None:
        monkeypatch.setenv("S3_ENDPOINT_URL", url)
        clear_filesystem_cache()

    yield from _proxies(s3_endpoint, point_at)
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


# ---- GCS and Azure: emulators on 127.0.0.1, each in a process of its own --------------------

# Azurite's well-known development account (public, in Microsoft's documentation).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr"
               "/KBHBeksoGMGw==")


def _serve(argv: list[str], port: int, name: str) -> Iterator[str]:
    """Run a server process on 127.0.0.1:``port`` for the session; yield its URL."""
    # Its output goes to a file, not a pipe: a pipe nobody reads would stall a chatty server.
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    log.seek(0)
                    pytest.fail(f"{name} exited at start: {log.read().decode()[-2000:]}")
                if time.monotonic() > deadline:
                    pytest.fail(f"{name} did not listen on 127.0.0.1:{port} within 60 s")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def gcs_endpoint() -> Iterator[str]:
    """The URL of a gcp-storage-emulator (GCS's JSON API, in memory) for this test session."""
    pytest.importorskip("gcsfs")
    pytest.importorskip("gcp_storage_emulator")
    port = _free_port()
    yield from _serve([sys.executable, "-m", "gcp_storage_emulator", "start", "--host=127.0.0.1",
                       f"--port={port}", "--in-memory"], port, "gcp-storage-emulator")


@pytest.fixture(scope="session")
def azurite_endpoint() -> Iterator[str]:
    """The URL of an Azurite blob service (in memory) for this test session.

    Azurite is an npm package (``npm install azurite``; ``.ci/run`` installs it): found as
    ``azurite-blob`` on ``PATH`` or through ``AZURITE_BLOB``, else the tests that need it skip.
    """
    pytest.importorskip("adlfs")
    azurite = os.environ.get("AZURITE_BLOB") or shutil.which("azurite-blob")
    if not azurite:
        pytest.skip("Azurite not found (npm install azurite; or set AZURITE_BLOB)")
    port = _free_port()
    yield from _serve([azurite, "--blobHost", "127.0.0.1", "--blobPort", str(port),
                       "--inMemoryPersistence", "--disableTelemetry", "--skipApiVersionCheck",
                       "--loose", "--silent"], port, "Azurite")


def _gcs_environment(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    from streaming.storage.filesystem import clear_filesystem_cache

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", endpoint)
    for name in ("GCS_KEY", "GCS_SECRET", "GOOGLE_APPLICATION_CREDENTIALS"):
        monkeypatch.delenv(name, raising=False)
    # Should anything still look for credentials, its metadata-server probe stays on loopback.
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    clear_filesystem_cache()


def _azure_environment(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    from streaming.storage.filesystem import clear_filesystem_cache

    # Only adlfs's connection string: no account name or key of the reference's variables.
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", (
        f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
        f"BlobEndpoint={endpoint}/{AZURITE_ACCOUNT};"))
    for name in ("AZURE_ACCOUNT_NAME", "AZURE_ACCOUNT_ACCESS_KEY", "AZURE_STORAGE_ACCOUNT_NAME",
                 "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    clear_filesystem_cache()


@pytest.fixture(params=["s3", "gs", "az"])
def cloud(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Cloud:
    """A fresh bucket on moto (S3), gcp-storage-emulator (GCS) or Azurite (Azure), with this
    process's environment pointing there."""
    from streaming.storage.filesystem import clear_filesystem_cache, get_filesystem

    if request.param == "s3":
        root = request.getfixturevalue("s3_bucket")
        point_s3_at = request.getfixturevalue("point_s3_at")

        def point_s3(url: str) -> None:
            point_s3_at(url)
            clear_filesystem_cache()

        return Cloud(root, request.getfixturevalue("s3_endpoint"), point_s3)
    name = f"test-{uuid.uuid4().hex[:16]}"
    if request.param == "gs":
        endpoint = request.getfixturevalue("gcs_endpoint")
        point_at = lambda url: _gcs_environment(monkeypatch, url)  # noqa: E731
    else:
        endpoint = request.getfixturevalue("azurite_endpoint")
        point_at = lambda url: _azure_environment(monkeypatch, url)  # noqa: E731
    point_at(endpoint)
    root = f"{request.param}://{name}"
    get_filesystem(root).mkdir(name)
    return Cloud(root, endpoint, point_at)


@pytest.fixture
def cloud_fault_proxy(cloud: Cloud) -> Iterator[Callable[..., FaultProxy]]:
    """A factory: ``cloud_fault_proxy(script=[...], rate=..., ...)`` starts a
    :class:`FaultProxy` in front of ``cloud``'s store and points its clients at it."""
    yield from _proxies(cloud.endpoint, cloud.point_at)


# ---- A plain web server on 127.0.0.1 ----------------------------------------------------------


class StaticServer(LoopbackServer):
    """Python's ``http.server`` over ``root``: it answers ``Range`` with the whole file (a plain
    200), as many simple web servers do; with ``ranges`` it answers them with a 206, and with
    ``refuse_ranges`` it says ``Accept-Ranges: none``. Each GET's path and ``Range`` header are
    recorded in ``gets``."""

    def __init__(self, root: str, *, ranges: bool = False, refuse_ranges: bool = False) -> None:
        self.gets: list[tuple[str, str | None]] = []
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *args: object, **kwargs: object) -> None:
                super().__init__(*args, directory=root, **kwargs)  # type: ignore[arg-type]

            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def end_headers(self) -> None:
                if refuse_ranges:
                    self.send_header("Accept-Ranges", "none")
                super().end_headers()

            def do_GET(self) -> None:
                wanted = self.headers.get("Range")
                server.gets.append((self.path, wanted))
                match = ranges and wanted and re.fullmatch(r"bytes=(\d+)-(\d+)", wanted)
                if not match:
                    super().do_GET()
                    return
                with open(self.translate_path(self.path), "rb") as f:
                    data = f.read()
                start, end = int(match.group(1)), min(int(match.group(2)) + 1, len(data))
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
                self.send_header("Content-Length", str(end - start))
                self.end_headers()
                self.wfile.write(data[start:end])

        self._start(Handler)


@pytest.fixture
def static_server() -> Iterator[Callable[..., StaticServer]]:
    """A factory: ``static_server(root, ranges=..., refuse_ranges=...)`` serves ``root`` over
    HTTP on 127.0.0.1 (see :class:`StaticServer`); all are stopped at teardown."""
    servers: list[StaticServer] = []

    def make(root: str, **kwargs: bool) -> StaticServer:
        servers.append(StaticServer(root, **kwargs))
        return servers[-1]

    yield make
    for server in servers:
        server.stop()


# ---- SFTP: paramiko's server side on 127.0.0.1 -------------------------------------------------


@pytest.fixture
def sftp_server(tmp_path_factory: pytest.TempPathFactory,
                monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """An :class:`sftp_standin.SFTPStandIn` serving a fresh directory; ``COMPOSER_SFTP_KEY_FILE``
    names the key its user logs in with (as the reference reads it)."""
    pytest.importorskip("paramiko")
    from sftp_standin import SFTPStandIn

    from streaming.storage.filesystem import clear_filesystem_cache

    keys = tmp_path_factory.mktemp("sftp-keys")
    server = SFTPStandIn(str(tmp_path_factory.mktemp("sftp-root")), str(keys / "id_rsa"))
    monkeypatch.setenv("COMPOSER_SFTP_KEY_FILE", str(keys / "id_rsa"))
    clear_filesystem_cache()
    yield server
    clear_filesystem_cache()
    server.stop()
