"""Packaging invariants: build outputs stay out of git, ``import streaming`` stays light."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs a git checkout")
def test_generated_files_are_git_ignored():
    kernels = sorted(p.stem for p in (ROOT / "src").glob("*.pyx"))
    assert kernels, "no Cython kernels found in src/"
    generated = ["build/lib/x.py", "dist/shardstream.tar.gz", "shardstream.egg-info/PKG-INFO"]
    for name in kernels:
        generated += [f"src/{name}.c", f"src/{name}.html",
                      f"streaming/_kernels/{name}.cpython-311-x86_64-linux-gnu.so"]
    result = subprocess.run(["git", "check-ignore", "--no-index", *generated], cwd=ROOT,
                            capture_output=True, text=True, check=False)
    ignored = set(result.stdout.split())
    assert ignored == set(generated), f"not ignored: {sorted(set(generated) - ignored)}"
    tracked = subprocess.run(["git", "ls-files", "*.so", "src/*.c"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    assert tracked == []


def test_import_streaming_is_light():
    """No torch, pyarrow, fsspec or compiled kernels at ``import streaming``: names load lazily."""
    code = (
        "import sys, streaming\n"
        "heavy = [m for m in ('torch', 'pyarrow', 'fsspec', 'numpy', 'streaming.dataset',"
        " 'streaming._kernels._mds') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
        "assert streaming.MDSWriter.__name__ == 'MDSWriter'\n"
        "assert streaming.base.StreamingDataset is streaming.StreamingDataset\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
