"""The user documentation builds with ``mkdocs build --strict`` (every link and page resolves)."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                    reason="mkdocs is not installed (pip install 'shardstream[docs]')")
def test_mkdocs_build_strict(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site"),
         "--config-file", str(ROOT / "mkdocs.yml")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    site = tmp_path / "site"
    assert (site / "index.html").is_file()
    assert (site / "format" / "index.html").is_file()
    assert (site / "explore.ipynb").is_file()  # the notebook ships with the docs
    page = (site / "api" / "streaming-dataset" / "index.html").read_text()
    for argument in ("shuffle_block_size", "num_canonical_nodes", "cache_limit", "predownload"):
        assert argument in page
