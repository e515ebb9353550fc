"""atomic_file: a file appears only complete; a full disk's error names the file (naming)."""

from __future__ import annotations

import errno
import os

import pytest

from streaming.storage.atomic import atomic_file, naming


def test_complete_file_appears_and_no_temp_is_left(tmp_path) -> None:
    path = tmp_path / "sub" / "f.bin"
    with atomic_file(str(path)) as (fd, tmp):
        os.write(fd, b"abc")
        assert os.path.dirname(tmp) == str(path.parent) and not path.exists()
    assert path.read_bytes() == b"abc"
    assert os.listdir(path.parent) == ["f.bin"]


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS])
def test_storage_error_names_the_file_and_leaves_nothing(tmp_path, code) -> None:
    path = tmp_path / "shard.00000.mds"
    path.write_bytes(b"old")
    with pytest.raises(OSError) as info:
        with atomic_file(str(path)) as (fd, _):
            os.write(fd, b"new, half")
            raise OSError(code, os.strerror(code))  # as os.write raises it: no file named
    assert info.value.errno == code and info.value.filename == str(path)
    assert str(path) in str(info.value) and os.strerror(code) in str(info.value)
    assert info.value.__cause__ is not None
    assert path.read_bytes() == b"old"  # untouched
    assert os.listdir(tmp_path) == ["shard.00000.mds"]


def test_other_errors_pass_unchanged(tmp_path) -> None:
    path = tmp_path / "f"
    reset = ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
    with pytest.raises(ConnectionResetError) as info:  # e.g. the download feeding the file
        with atomic_file(str(path)):
            raise reset
    assert info.value is reset
    named = OSError(errno.ENOSPC, "No space left on device", "/elsewhere")
    with pytest.raises(OSError) as info:
        with atomic_file(str(path)):
            raise named
    assert info.value is named  # already names its file
    assert os.listdir(tmp_path) == []


def test_naming_only_unnamed_storage_errors() -> None:
    full = OSError(errno.ENOSPC, "No space left on device")
    named = naming(full, "/d/f")
    assert type(named) is OSError and named.errno == errno.ENOSPC and named.filename == "/d/f"
    assert naming(OSError(errno.ENOSPC, "x", "/other"), "/d/f") is None
    assert naming(ConnectionResetError(errno.ECONNRESET, "reset"), "/d/f") is None
    assert naming(OSError(errno.EIO, "Input/output error"), "/d/f") is None  # maybe a read
    assert naming(OSError("no errno"), "/d/f") is None
    assert naming(ValueError("not an OSError"), "/d/f") is None


def test_run_state_on_a_full_disk_names_its_file(tmp_path, monkeypatch) -> None:
    import builtins

    from streaming import run_state

    class Full:
        def __init__(self, path, mode):
            self.file = builtins.open(path, mode)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(run_state, "open", Full, raising=False)
    with pytest.raises(OSError) as info:
        run_state.RunState(str(tmp_path))
    assert info.value.errno == errno.ENOSPC
    assert info.value.filename.startswith(str(tmp_path / "runs")) and \
        info.value.filename.endswith(".json")
    assert os.listdir(tmp_path / "runs") == []  # the temp file is gone
