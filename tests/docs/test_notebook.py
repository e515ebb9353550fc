"""docs/explore.ipynb runs top to bottom, against a dataset written here, without errors."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

NOTEBOOK = pathlib.Path(__file__).resolve().parents[2] / "docs" / "explore.ipynb"


def _outputs(cell: dict, mime: str) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if mime == "stream" and out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif mime in out.get("data", {}):
            parts.append(out["data"][mime])
    return "".join(parts)


def test_explore_notebook_executes(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed")
    Image = pytest.importorskip("PIL.Image", reason="Pillow is not installed")

    from streaming import MDSWriter

    data = tmp_path / "dataset"
    columns = {"uid": "int", "title": "str", "photo": "png", "vec": "ndarray:int16:2,3"}
    with MDSWriter(out=str(data), columns=columns, compression="zstd", size_limit="1kb") as out:
        for i in range(25):
            out.write({"uid": 1000 + i, "title": f"<title {i}>",
                       "photo": Image.fromarray(np.full((6, 6), 10 * i, np.uint8)),
                       "vec": np.arange(6, dtype=np.int16).reshape(2, 3) * i})
    monkeypatch.setenv("STREAMING_EXPLORE_DATASET", str(data))
    monkeypatch.setenv("STREAMING_PROGRESS", "1")
    kernel_tmp = tmp_path / "kernel-tmp"  # the kernel's temp directory: left empty at the end
    kernel_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(kernel_tmp))

    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    assert not list(kernel_tmp.iterdir())  # the notebook removes the caches it made

    code = [c for c in nb.cells if c.cell_type == "code"]
    assert str(data) in _outputs(code[0], "text/plain")  # it explored our dataset, not the demo
    index_html = _outputs(code[1], "text/html")
    for name in columns:
        assert name in index_html
    assert "25" in index_html  # the sample count
    text = _outputs(code[2], "stream")
    assert "25 samples in" in text and "vec" in text
    head_html = "".join(_outputs(c, "text/html") for c in code)
    assert "<img" in head_html  # png column shown inline
    assert "&lt;title 0&gt;" in head_html and "<title 0>" not in head_html  # escaped
    everything = "".join(_outputs(c, "text/plain") + _outputs(c, "stream") for c in code)
    assert "vec (20, 2, 3) int16" in everything
