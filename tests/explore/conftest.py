"""Fixtures for the explore tests: a request-counting moto S3 server and small datasets."""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterator

import pytest


class CountingMotoServer:
    """A moto S3 server on 127.0.0.1 that records every HTTP request it serves.

    The recording happens in a WSGI middleware in front of moto's application, i.e. on the
    server side: it counts what the client really sent, whatever library sent it.
    """

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self.requests: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()
        outer = self

        class _Server(ThreadedMotoServer):
            def _server_entry(self) -> None:
                from moto.moto_server.werkzeug_app import (
                    DomainDispatcherApplication,
                    MotoRequestHandler,
                    create_backend_app,
                )
                from werkzeug.serving import make_server

                app = DomainDispatcherApplication(create_backend_app)
                self._server = make_server(
                    self._ip_address, self._port, outer._middleware(app), True,
                    request_handler=MotoRequestHandler,
                )
                self._server_ready_event.set()
                self._server.serve_forever()

        self._server = _Server(ip_address="127.0.0.1", port=0, verbose=False)

    def _middleware(self, app: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            with self._lock:
                self.requests.append((environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""),
                                      environ.get("QUERY_STRING", "")))
            return app(environ, start_response)

        return wrapped

    def start(self) -> str:
        self._server.start()
        host, port = self._server.get_host_and_port()
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self._server.stop()

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()


@pytest.fixture(scope="session")
def counting_s3() -> Iterator[tuple[CountingMotoServer, str]]:
    """``(server, endpoint_url)`` of a request-counting moto S3 server for this session."""
    server = CountingMotoServer()
    endpoint = server.start()
    yield server, endpoint
    server.stop()


@pytest.fixture
def counted_bucket(counting_s3: tuple[CountingMotoServer, str],
                   point_s3_at: Callable[[str], None]) -> tuple[CountingMotoServer, str, Any]:
    """``(server, "s3://BUCKET", boto3 client)``: a fresh bucket; S3 env vars point at it."""
    import uuid

    import boto3

    from streaming.storage.filesystem import clear_filesystem_cache

    server, endpoint = counting_s3
    point_s3_at(endpoint)
    clear_filesystem_cache()
    name = f"explore-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=endpoint)
    client.create_bucket(Bucket=name)
    yield server, f"s3://{name}", client
    clear_filesystem_cache()
