"""Every argument of the public constructors is documented on its API reference page."""

from __future__ import annotations

import inspect
import pathlib
import pkgutil

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "api"

PAGES = {
    "StreamingDataset": "streaming-dataset.md",
    "Stream": "stream.md",
    "LocalDataset": "local-dataset.md",
    "MDSWriter": "writers.md",
    "JSONWriter": "writers.md",
    "XSVWriter": "writers.md",
    "CSVWriter": "writers.md",
    "TSVWriter": "writers.md",
    "text.StreamingC4": "dataset-classes.md",
    "text.StreamingEnWiki": "dataset-classes.md",
    "text.StreamingPile": "dataset-classes.md",
    "vision.StreamingCIFAR10": "dataset-classes.md",
    "vision.StreamingImageNet": "dataset-classes.md",
    "vision.StreamingADE20K": "dataset-classes.md",
    "vision.StreamingCOCO": "dataset-classes.md",
    "multimodal.StreamingOutsideGIWebVid": "dataset-classes.md",
    "multimodal.StreamingOutsideDTWebVid": "dataset-classes.md",
}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_argument_is_documented(name):
    cls = pkgutil.resolve_name(f"streaming.{name}")
    page = (DOCS / PAGES[name]).read_text()
    params = [p for p in inspect.signature(cls.__init__).parameters.values()
              if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    assert params, f"{name} has no explicit arguments to check"
    missing = [p.name for p in params if f"`{p.name}`" not in page]
    assert not missing, f"{PAGES[name]} does not document {name} argument(s) {missing}"
    name = name.rsplit(".", 1)[-1]
    assert f"`{name}" in page or f"# {name}" in page or name in page


def test_documented_defaults_match_streaming_dataset():
    import streaming

    page = (DOCS / "streaming-dataset.md").read_text()
    for p in inspect.signature(streaming.StreamingDataset.__init__).parameters.values():
        if p.name == "self" or p.default is inspect.Parameter.empty:
            continue
        default = repr(p.default).replace("'", '"')
        assert f"`{p.name}`" in page
        assert f"{p.name}={default}" in page, f"signature block shows {p.name} default {default}"
