"""HTML and terminal views of samples, shards and StreamingDatasets; the progress helper."""

from __future__ import annotations

import base64
import io
import re

import numpy as np
import pytest

from streaming.explore import open_dataset, render_html, render_text
from streaming.explore.html import render_sample, render_value

Image = pytest.importorskip("PIL.Image", reason="Pillow is needed for image columns")


@pytest.fixture(scope="module")
def image_dataset(tmp_path_factory):
    from streaming import MDSWriter

    out = str(tmp_path_factory.mktemp("render") / "ds")
    columns = {"label": "int", "caption": "str", "photo": "jpeg", "mask": "png",
               "pixels": "pil", "vec": "ndarray:float32:100"}
    with MDSWriter(out=out, columns=columns, size_limit="8kb") as writer:
        for i in range(6):
            rgb = np.full((300, 200, 3), 20 * i, np.uint8)
            writer.write({"label": i, "caption": "<script>alert(1)</script>" + "x" * 500,
                          "photo": Image.fromarray(rgb), "mask": Image.fromarray(rgb[..., 0]),
                          "pixels": Image.fromarray(rgb[:10, :10]),
                          "vec": np.arange(100, dtype=np.float32)})
    return out, columns


def embedded_images(page: str) -> list:
    found = re.findall(r'<img src="data:(image/\w+);base64,([A-Za-z0-9+/=]+)"', page)
    return [(mime, Image.open(io.BytesIO(base64.b64decode(data)))) for mime, data in found]


def test_sample_html_has_thumbnails_summaries_and_escaping(image_dataset):
    out, columns = image_dataset
    with open_dataset(out) as ds:
        page = ds.sample(2)._repr_html_()
    for name, encoding in columns.items():
        assert f"<b>{name}</b>" in page and encoding in page
    images = embedded_images(page)
    assert len(images) == 3  # jpeg, png and pil columns
    for _, image in images:
        assert max(image.size) <= 128  # thumbnails, not full images
    assert [image.size for _, image in images] == [(85, 128), (85, 128), (10, 10)]
    assert "300×200" not in page and "200×300 RGB" in page  # width×height of the original
    assert "ndarray shape=(100,) dtype=float32" in page and "…" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "(525 chars)" in page  # long string cut, its length shown


def test_samples_table_html_and_text(image_dataset):
    out, columns = image_dataset
    with open_dataset(out) as ds:
        rows = ds.head(4)
        page = rows._repr_html_()
        text = repr(rows)
    assert page.count("<tr>") == 1 + 4  # header + 4 samples
    assert len(embedded_images(page)) == 3 * 4
    for name in columns:
        assert f"<th>{name}</th>" in page and name in text
    assert "<image 200x300 RGB>" in text
    assert text.splitlines()[2].split()[0] == "0" and text.splitlines()[5].split()[0] == "3"


def test_shard_view_never_downloads_from_repr(image_dataset, tmp_path):
    from streaming import MDSWriter

    out, _ = image_dataset
    with open_dataset(out, cache_dir=str(tmp_path / "c")) as ds:
        shard = ds.shard(1)
        assert shard.is_local  # raw shards on disk: the repr shows the first samples
        page = shard._repr_html_()
        assert "shard 1" in page and shard.info.basename in page
        assert re.search(r"first \d+ samples", page) and "<img" in page
        assert repr(shard).startswith("shard 1 (mds)")
    packed = str(tmp_path / "packed")
    with MDSWriter(out=packed, columns={"n": "int"}, compression="zstd", size_limit=64) as writer:
        for i in range(20):
            writer.write({"n": i})
    cache = tmp_path / "c2"
    with open_dataset(packed, cache_dir=str(cache)) as ds:
        shard = ds.shard(1)
        assert not shard.is_local  # only the zstd file: reading would mean decompressing
        page = shard._repr_html_()
        assert "shard 1" in page and not re.search(r"first \d+ samples", page)
        assert not shard.is_local
        assert not cache.exists() or not any(cache.iterdir())


def test_value_rendering_without_pillow_embeds_encoded_bytes(monkeypatch):
    import sys

    jpeg = io.BytesIO()
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(jpeg, format="JPEG")
    monkeypatch.setitem(sys.modules, "PIL", None)  # import PIL -> ImportError
    page = render_value(jpeg.getvalue(), "jpeg")
    assert page.startswith('<img src="data:image/jpeg;base64,')
    assert base64.b64decode(re.search(r"base64,([^\"]+)", page).group(1)) == jpeg.getvalue()


def test_render_html_of_plain_dict_and_streaming_dataset(image_dataset, tmp_path):
    from streaming import StreamingDataset

    page = render_html({"a": 1, "b": "<i>"})
    assert "<b>a</b>" in page and "&lt;i&gt;" in page
    assert render_sample({"z": [1, 2]}).count("<code>[1, 2]</code>") == 1
    out, _ = image_dataset
    dataset = StreamingDataset(remote=out, local=str(tmp_path / "cache"), batch_size=2)
    page = render_html(dataset)
    assert "StreamingDataset" in page and out in page
    assert "<th>samples</th><td>6</td>" in page
    assert re.search(r"<td>py1e</td>", page)
    assert "<th>stream</th>" in page


def test_render_text_dispatch(image_dataset):
    out, _ = image_dataset
    with open_dataset(out) as ds:
        assert render_text(ds.index).startswith("streaming dataset index:")
        assert render_text(ds.index.shards[0]).startswith("shard 0 (mds)")
        assert render_text(ds.sample(0)).splitlines()[1].split()[0] == "caption"


def test_progress_bar_environment(monkeypatch, capsys):
    from streaming.explore.progress import in_notebook, progress_bar, progress_enabled

    assert not in_notebook()
    monkeypatch.setenv("STREAMING_PROGRESS", "0")
    assert progress_enabled() is True and progress_enabled(False) is False
    assert list(progress_bar(range(5), desc="quiet")) == list(range(5))
    assert "quiet" not in capsys.readouterr().err
    monkeypatch.setenv("STREAMING_PROGRESS", "1")
    assert sum(progress_bar(range(5), desc="loud")) == 10
    assert "loud" in capsys.readouterr().err
    with progress_bar(total=100, desc="bytes", unit="B", unit_scale=True) as bar:
        bar.update(100)
    assert "100" in capsys.readouterr().err
    monkeypatch.delenv("STREAMING_PROGRESS")
    assert progress_enabled() is None  # tqdm decides: hidden when stderr is not a terminal


def test_long_jobs_use_the_shared_progress_bar(tmp_path, monkeypatch, capsys, s3_bucket):
    """verify and the uploader draw their bars through progress_bar (STREAMING_PROGRESS=1)."""
    import numpy as np

    from streaming import MDSWriter
    from streaming.format.check import verify_dataset

    monkeypatch.setenv("STREAMING_PROGRESS", "1")
    out = tmp_path / "data"
    with MDSWriter(out=str(out), columns={"x": "ndarray:int32:4"}, size_limit=64) as w:
        for i in range(10):
            w.write({"x": np.full(4, i, np.int32)})
    problems, counts = verify_dataset(str(out), progress=None)
    assert not problems and counts["shards"] >= 2
    err = capsys.readouterr().err
    assert "verifying" in err and f"{counts['shards']}/{counts['shards']}" in err
    remote = f"{s3_bucket}/ds"
    with MDSWriter(out=(str(tmp_path / "local"), remote),
                   columns={"x": "ndarray:int32:4"}, progress_bar=True) as w:
        w.write({"x": np.zeros(4, np.int32)})
    assert f"Uploading to {remote}/index.json" in capsys.readouterr().err
