"""``streaming.base.shared.SharedMemory``: the reference's wrapper, kept for user code (the
dataset itself uses no shared memory). Its ``create=None`` default creates or else attaches."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from streaming.base.shared import SharedMemory


@pytest.fixture
def name():
    return f"shardstream_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"


def test_default_creates_else_attaches(name):
    first = SharedMemory(name=name, size=16)
    try:
        first.buf[:3] = b"abc"
        second = SharedMemory(name=name, size=16)  # it exists: attached, not FileExistsError
        assert bytes(second.buf[:3]) == b"abc"
        second.cleanup()  # an attached block is left for its creator
        assert bytes(SharedMemory(name=name, create=False).buf[:3]) == b"abc"
        with pytest.raises(FileExistsError):
            SharedMemory(name=name, create=True, size=16)
    finally:
        first.cleanup()
    with pytest.raises(FileNotFoundError):
        SharedMemory(name=name, create=False)


def test_another_process_attaching_does_not_remove_the_block(name):
    block = SharedMemory(name=name, size=8)
    try:
        block.buf[0] = 42
        code = ("import sys; from streaming.base.shared import SharedMemory; "
                "m = SharedMemory(name=sys.argv[1], size=8); print(m.buf[0]); m.buf[1] = 7")
        out = subprocess.run([sys.executable, "-c", code, name], capture_output=True,
                             text=True, check=True)
        assert out.stdout.split() == ["42"]
        assert "leaked" not in out.stderr
        again = SharedMemory(name=name, create=False)
        assert bytes(again.buf[:2]) == bytes([42, 7])
        again.cleanup()
    finally:
        block.cleanup()
