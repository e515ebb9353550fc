"""An SFTP server on 127.0.0.1 for the storage tests: paramiko's server side, serving one local
directory to one user who logs in with a key, so that fsspec's real ``SFTPFileSystem`` (and
paramiko's client under it) talks the real protocol over a real socket.

A client path ``/a/b`` is ``root/a/b``; paths that would leave ``root`` are refused.
"""

from __future__ import annotations

import os
import socket
import threading

import paramiko
from paramiko.sftp import SFTP_FAILURE, SFTP_NO_SUCH_FILE, SFTP_OK, SFTP_PERMISSION_DENIED

USER = "tester"


def _status(error: OSError) -> int:
    return paramiko.SFTPServer.convert_errno(error.errno)


class _Handle(paramiko.SFTPHandle):
    def stat(self) -> paramiko.SFTPAttributes | int:
        try:
            return paramiko.SFTPAttributes.from_stat(os.fstat(self.filehandle.fileno()))
        except OSError as error:
            return _status(error)


class _Files(paramiko.SFTPServerInterface):
    """The SFTP operations fsspec's filesystem uses, on the files under ``root``."""

    def __init__(self, server: paramiko.ServerInterface, root: str) -> None:
        super().__init__(server)
        self.root = root

    def _local(self, path: str) -> str:
        local = os.path.realpath(os.path.join(self.root, self.canonicalize(path).lstrip("/")))
        if os.path.commonpath([local, self.root]) != self.root:
            raise PermissionError(f"{path}: outside the served directory")
        return local

    def _attributes(self, path: str, follow: bool) -> paramiko.SFTPAttributes | int:
        try:
            local = self._local(path)
            st = os.stat(local) if follow else os.lstat(local)
        except PermissionError:
            return SFTP_PERMISSION_DENIED
        except OSError as error:
            return _status(error)
        attributes = paramiko.SFTPAttributes.from_stat(st)
        attributes.filename = os.path.basename(local)
        return attributes

    def stat(self, path: str) -> paramiko.SFTPAttributes | int:
        return self._attributes(path, True)

    def lstat(self, path: str) -> paramiko.SFTPAttributes | int:
        return self._attributes(path, False)

    def list_folder(self, path: str) -> list[paramiko.SFTPAttributes] | int:
        try:
            local = self._local(path)
            names = os.listdir(local)
        except OSError as error:
            return _status(error)
        found = []
        for name in names:
            attributes = self._attributes(os.path.join(path, name), False)
            if not isinstance(attributes, int):
                found.append(attributes)
        return found

    def open(self, path: str, flags: int, attr: paramiko.SFTPAttributes) -> _Handle | int:
        try:
            local = self._local(path)
            fd = os.open(local, flags | getattr(os, "O_BINARY", 0), 0o644)
        except OSError as error:
            return _status(error)
        if flags & os.O_WRONLY:
            mode = "ab" if flags & os.O_APPEND else "wb"
        elif flags & os.O_RDWR:
            mode = "a+b" if flags & os.O_APPEND else "r+b"
        else:
            mode = "rb"
        handle = _Handle(flags)
        handle.filehandle = handle.readfile = handle.writefile = os.fdopen(fd, mode)
        return handle

    def _call(self, fn, *paths: str) -> int:  # type: ignore[no-untyped-def]
        try:
            fn(*[self._local(p) for p in paths])
        except PermissionError:
            return SFTP_PERMISSION_DENIED
        except OSError as error:
            return _status(error)
        return SFTP_OK

    def remove(self, path: str) -> int:
        return self._call(os.remove, path)

    def rename(self, oldpath: str, newpath: str) -> int:
        if os.path.exists(self._local(newpath)):
            return SFTP_FAILURE  # SFTP's rename does not replace; posix_rename does
        return self._call(os.rename, oldpath, newpath)

    def posix_rename(self, oldpath: str, newpath: str) -> int:
        return self._call(os.replace, oldpath, newpath)

    def mkdir(self, path: str, attr: paramiko.SFTPAttributes) -> int:
        return self._call(os.mkdir, path)

    def rmdir(self, path: str) -> int:
        return self._call(os.rmdir, path)

    def chattr(self, path: str, attr: paramiko.SFTPAttributes) -> int:
        return SFTP_OK if os.path.exists(self._local(path)) else SFTP_NO_SUCH_FILE


class _Login(paramiko.ServerInterface):
    def __init__(self, key: paramiko.PKey) -> None:
        self.key = key

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        ok = username == USER and key.get_base64() == self.key.get_base64()
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

    def check_channel_request(self, kind: str, chanid: int) -> int:
        return paramiko.OPEN_SUCCEEDED if kind == "session" else \
            paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED


class SFTPStandIn:
    """Serve ``root`` over SFTP on 127.0.0.1 to :data:`USER`, who logs in with the private key
    written to ``key_file``. ``connections`` counts the SSH connections accepted."""

    def __init__(self, root: str, key_file: str) -> None:
        self.root = os.path.realpath(root)
        self.host_key = paramiko.RSAKey.generate(2048)
        user_key = paramiko.RSAKey.generate(2048)
        user_key.write_private_key_file(key_file)
        self.login = _Login(user_key)
        self.connections = 0
        self.transports: list[paramiko.Transport] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed by stop()
                return
            transport = paramiko.Transport(conn)
            transport.add_server_key(self.host_key)
            transport.set_subsystem_handler("sftp", paramiko.SFTPServer, _Files, self.root)
            self.transports.append(transport)
            self.connections += 1
            try:
                transport.start_server(server=self.login)
            except (paramiko.SSHException, EOFError, OSError):
                continue

    def url(self, path: str = "") -> str:
        """``sftp://USER@127.0.0.1:PORT/path``."""
        return f"sftp://{USER}@127.0.0.1:{self.port}/{path.lstrip('/')}"

    def open_connections(self) -> int:
        """How many of the accepted connections are still open."""
        return sum(1 for t in self.transports if t.is_active())

    def stop(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)  # (wakes accept(); close() alone would not)
        self.sock.close()
        for transport in self.transports:
            transport.close()
        self.thread.join(timeout=10)
