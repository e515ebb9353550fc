"""A small stand-in for the Hugging Face Hub's HTTP API on 127.0.0.1, serving one directory as
the ``main`` revision of dataset repos, for huggingface_hub's real ``HfFileSystem``.

Only what ``HfFileSystem`` calls to list, stat and read files of a dataset repo is implemented:

- ``GET /api/datasets/{repo}[/revision/{rev}]``: repo info (does the repo/revision exist).
- ``GET /api/datasets/{repo}/tree/{rev}[/{path}]``: a directory listing.
- ``POST /api/datasets/{repo}/paths-info/{rev}``: info on named paths (form or JSON ``paths``).
- ``GET|HEAD /datasets/{repo}/resolve/{rev}/{path}``: file bytes, honouring ``Range``.

Anything else answers 404 and is recorded in ``unknown`` so a test can show what was missed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SHA = "0123456789abcdef0123456789abcdef01234567"


class LoopbackServer:
    """A ``ThreadingHTTPServer`` on 127.0.0.1 run by a daemon thread (also the base of
    ``conftest.FaultProxy``)."""

    def _start(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


class HubStandIn(LoopbackServer):
    """Serve ``root`` as every dataset repo's files (``repo`` must be ``ORG/NAME``)."""

    def __init__(self, root: str, repo: str) -> None:
        self.root = root
        self.repo = repo
        self.requests: list[tuple[str, str]] = []
        self.unknown: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                stand_in._serve(self, "GET")

            def do_HEAD(self) -> None:
                stand_in._serve(self, "HEAD")

            def do_POST(self) -> None:
                stand_in._serve(self, "POST")

        self._start(Handler)

    # -- responses -------------------------------------------------------------------------------

    def _entry(self, rel: str) -> dict | None:
        full = os.path.join(self.root, rel)
        if os.path.isdir(full):
            return {"type": "directory", "oid": SHA, "path": rel}
        if os.path.isfile(full):
            with open(full, "rb") as f:
                oid = hashlib.sha1(f.read()).hexdigest()
            return {"type": "file", "oid": oid, "size": os.path.getsize(full), "path": rel}
        return None

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes = b"",
              headers: dict[str, str] | None = None, head: bool = False) -> None:
        handler.send_response(status)
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if not head:
            handler.wfile.write(body)

    def _json(self, handler: BaseHTTPRequestHandler, obj: object) -> None:
        self._send(handler, 200, json.dumps(obj).encode(), {"Content-Type": "application/json"})

    def _not_found(self, handler: BaseHTTPRequestHandler, method: str, path: str,
                   known: bool = True) -> None:
        if not known:
            with self.lock:
                self.unknown.append((method, path))
        self._send(handler, 404, b'{"error": "Entry not found"}',
                   {"Content-Type": "application/json", "X-Error-Code": "EntryNotFound"},
                   head=method == "HEAD")

    def _serve(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parsed = urllib.parse.urlsplit(handler.path)
        path = urllib.parse.unquote(parsed.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        with self.lock:
            self.requests.append((method, path))
        repo = re.escape(self.repo)
        if m := re.fullmatch(rf"/api/datasets/{repo}(?:/revision/([^/]+))?", path):
            if m.group(1) not in (None, "main", SHA):
                return self._not_found(handler, method, path)
            return self._json(handler, {"id": self.repo, "sha": SHA, "private": False,
                                        "siblings": [], "tags": [], "downloads": 0, "likes": 0})
        if m := re.fullmatch(rf"/api/datasets/{repo}/tree/([^/]+)(?:/(.*))?", path):
            rel = (m.group(2) or "").strip("/")
            full = os.path.join(self.root, rel)
            if not os.path.isdir(full):
                return self._not_found(handler, method, path)
            entries = [self._entry(os.path.join(rel, name).lstrip("/"))
                       for name in sorted(os.listdir(full))]
            return self._json(handler, [e for e in entries if e])
        if re.fullmatch(rf"/api/datasets/{repo}/paths-info/([^/]+)", path):
            ctype = handler.headers.get("Content-Type", "")
            if "json" in ctype:
                paths = json.loads(body or b"{}").get("paths", [])
            else:
                paths = urllib.parse.parse_qs(body.decode()).get("paths", [])
            if isinstance(paths, str):
                paths = [paths]
            entries = [self._entry(p.strip("/")) for p in paths]
            return self._json(handler, [e for e in entries if e])
        if m := re.fullmatch(rf"/datasets/{repo}/resolve/([^/]+)/(.+)", path):
            full = os.path.join(self.root, m.group(2))
            if not os.path.isfile(full):
                return self._not_found(handler, method, path)
            with open(full, "rb") as f:
                data = f.read()
            size = len(data)
            headers = {"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes",
                       "ETag": f'"{hashlib.sha1(data).hexdigest()}"', "X-Repo-Commit": SHA}
            rng = handler.headers.get("Range")
            if rng and (r := re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())):
                start = int(r.group(1))
                end = min(int(r.group(2)) + 1 if r.group(2) else size, size)
                if start >= size and size:
                    return self._send(handler, 416, b"", {"Content-Range": f"bytes */{size}"},
                                      head=method == "HEAD")
                headers["Content-Range"] = f"bytes {start}-{max(start, end - 1)}/{size}"
                return self._send(handler, 206, data[start:end], headers, head=method == "HEAD")
            return self._send(handler, 200, data, headers, head=method == "HEAD")
        return self._not_found(handler, method, path, known=False)
