"""The reference's ready-made dataset classes (``streaming.text``, ``.vision``, ``.multimodal``)
return and yield exactly what the reference's do (``oracles/fixtures/dataset_classes``), with
the same deterministic stand-ins for a Hugging Face tokenizer and torchvision on both sides.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import threading
import time

import pytest

from streaming import MDSWriter

_ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "_dataset_classes_cases", _ROOT / "oracles" / "cases" / "_dataset_classes_cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

FIXTURE = json.loads(
    (_ROOT / "oracles" / "fixtures" / "dataset_classes" / "dataset_classes.json").read_text())

_PACKAGES = ("text", "vision", "multimodal")


def _ours() -> list[str]:
    return [m for m in sys.modules if m.split(".")[:2] in [["streaming", p] for p in _PACKAGES]]


def _import_class(module: str, name: str) -> type:
    return getattr(importlib.import_module(module), name)


@pytest.fixture
def fresh_import(monkeypatch):
    """``streaming.text/vision/multimodal`` imported anew within the test (against whatever
    the test puts in ``sys.modules``), and the earlier ones back after it."""
    import streaming

    # Not through monkeypatch.delattr: its hasattr would import them through streaming's lazy
    # __getattr__, before the test has set anything up.
    attributes = {p: streaming.__dict__.pop(p) for p in _PACKAGES if p in streaming.__dict__}
    modules = {name: sys.modules.pop(name) for name in _ours()}
    yield monkeypatch
    for name in _ours():
        del sys.modules[name]
    for package in _PACKAGES:
        streaming.__dict__.pop(package, None)
    sys.modules.update(modules)
    streaming.__dict__.update(attributes)


@pytest.fixture
def standins(fresh_import):
    """The stand-in ``transformers`` and ``torchvision`` the oracle also used."""
    fresh_import.setitem(sys.modules, "transformers", cases.transformers_module())
    for name, module in cases.torchvision_modules().items():
        fresh_import.setitem(sys.modules, name, module)
    return fresh_import


@pytest.mark.filterwarnings("ignore:Trying to partition")
@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_case_matches_reference(name, standins, tmp_path):
    got = cases.run_case(name, MDSWriter, str(tmp_path), _import_class)
    want = FIXTURE["cases"][name]
    assert got["len"] == want["len"]
    for index, (g, w) in enumerate(zip(got["items"], want["items"])):
        assert g == w, f"{name}: get_item({index})"
    assert got["epoch"] == want["epoch"], f"{name}: the shuffled epoch"
    assert got == want


@pytest.mark.parametrize("name", sorted(cases.ERRORS))
def test_argument_error_matches_reference(name, standins, tmp_path):
    assert cases.run_error(name, MDSWriter, str(tmp_path), _import_class) == \
        FIXTURE["errors"][name]


def test_missing_transformers_is_named_before_storage_is_touched(fresh_import, tmp_path):
    fresh_import.setitem(sys.modules, "transformers", None)
    from streaming.text import StreamingC4, StreamingPile

    for cls in (StreamingC4, StreamingPile):
        local = tmp_path / cls.__name__
        with pytest.raises(ImportError, match=f"{cls.__name__} needs transformers.*"
                                              "pip install transformers"):
            cls(remote=str(tmp_path / "nowhere"), local=str(local), tokenizer_name="gpt2",
                max_seq_len=8, group_method="truncate")
        assert not local.exists()


@pytest.mark.filterwarnings("ignore:Trying to partition")
def test_vision_without_torchvision(fresh_import, tmp_path):
    # Every torchvision module hidden: a real one imported earlier leaves its submodules in
    # sys.modules, where importlib finds them without looking at the parent.
    for name in [m for m in sys.modules if m.split(".")[0] == "torchvision"] + ["torchvision"]:
        fresh_import.setitem(sys.modules, name, None)
    from streaming.vision import StreamingCIFAR10, StreamingCOCO

    cases.write_dataset(MDSWriter, "image_class", str(tmp_path / "cifar"))
    # The default transform is torchvision's to_tensor: named at construction.
    with pytest.raises(ImportError, match="needs torchvision.*pip install torchvision"):
        StreamingCIFAR10(local=str(tmp_path / "cifar"), batch_size=4)
    # With a transform of the user's own, torchvision is not needed.
    dataset = StreamingCIFAR10(local=str(tmp_path / "cifar"), batch_size=4,
                               transform=cases.flip)
    samples = cases.make_samples("image_class")
    x, y = dataset[3]
    assert (x == cases.flip(samples[3]["x"])).all() and y == samples[3]["y"]
    # COCO never needed it.
    cases.write_dataset(MDSWriter, "coco", str(tmp_path / "coco"))
    assert StreamingCOCO(local=str(tmp_path / "coco"))[0][1] == 1000


class _BrokenTorchvision:
    """A ``torchvision`` built for another torch: importing it fails, as it does here."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torchvision":
            raise RuntimeError("operator torchvision::nms does not exist")
        return None


def test_vision_imports_beside_a_broken_torchvision(fresh_import, tmp_path):
    for name in [m for m in sys.modules if m.split(".")[0] == "torchvision"]:
        fresh_import.delitem(sys.modules, name)
    fresh_import.setattr(sys, "meta_path", [_BrokenTorchvision()] + sys.meta_path)
    from streaming.vision import StreamingADE20K, StreamingImageNet

    cases.write_dataset(MDSWriter, "ade20k", str(tmp_path / "ade"))
    assert StreamingADE20K(local=str(tmp_path / "ade"))[0][0].size == \
        cases.make_samples("ade20k")[0]["x"].size
    cases.write_dataset(MDSWriter, "image_class", str(tmp_path / "imagenet"))
    with pytest.raises(RuntimeError, match="torchvision::nms"):
        StreamingImageNet(local=str(tmp_path / "imagenet"), batch_size=4)


def test_vision_dataset_is_a_torchvision_vision_dataset(standins, tmp_path):
    from torchvision.datasets import VisionDataset

    from streaming.vision import StreamingImageNet

    cases.write_dataset(MDSWriter, "image_class", str(tmp_path))
    dataset = StreamingImageNet(local=str(tmp_path), batch_size=4)
    assert isinstance(dataset, VisionDataset)
    # VisionDataset's repr reads ``root``, which its __init__ (not called) would have set.
    assert repr(dataset) == "Dataset StreamingImageNet (root None)"


def test_standard_transform_repr_lists_its_transforms():
    """Laid out as torchvision's (VisionDataset's repr indents it under the dataset's)."""
    from streaming.vision.base import StandardTransform

    class Pipeline:
        def __repr__(self) -> str:
            return "Pipeline(\n    Crop(6)\n)"

    class Label:
        def __repr__(self) -> str:
            return "Label()"

    assert repr(StandardTransform()) == "StandardTransform"
    assert repr(StandardTransform(Pipeline(), Label())).splitlines() == [
        "StandardTransform", "Transform: Pipeline(", "               Crop(6)",
        "           )", "Target transform: Label()"]
    assert repr(StandardTransform(target_transform=Label())).splitlines() == [
        "StandardTransform", "Target transform: Label()"]

    class Blank:
        def __repr__(self) -> str:
            return ""

    assert repr(StandardTransform(Blank())) == "StandardTransform\nTransform: "


def test_top_level_attributes_load_lazily():
    code = ("import sys, streaming; "
            "assert not any(m.startswith(('streaming.text', 'streaming.vision', "
            "'streaming.multimodal')) for m in sys.modules); "
            "from streaming import *; "
            "print(text.StreamingC4.__name__, vision.StreamingCOCO.__name__, "
            "multimodal.StreamingInsideWebVid.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONWARNINGS": "error"})
    assert out.stdout.split() == ["StreamingC4", "StreamingCOCO", "StreamingInsideWebVid"]


class _RecordingDownloader:
    """Wraps a downloader: counts downloads per file, each slowed so prefetching shows."""

    def __init__(self, inner):
        self.inner = inner
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def download(self, remote, local, timeout):
        with self.lock:
            self.calls.append(os.path.basename(local))
        time.sleep(0.01)
        self.inner.download(remote, local, timeout)


def _webvid(cls, tmp_path, predownload):
    cases.write_dataset(MDSWriter, "webvid_outside", str(tmp_path / "data"))
    cases.write_videos(str(tmp_path / "remote"))
    dataset = cls(local=str(tmp_path / "data"), extra_remote=str(tmp_path / "remote"),
                  extra_local=str(tmp_path / "cache"), predownload=predownload, batch_size=4,
                  num_canonical_nodes=1)
    dataset._extra_downloader = _RecordingDownloader(dataset._extra_downloader)
    return dataset


def test_webvid_dt_downloads_videos_ahead_once_each(tmp_path):
    from streaming.multimodal import StreamingOutsideDTWebVid

    dataset = _webvid(StreamingOutsideDTWebVid, tmp_path, predownload=6)
    calls = dataset._extra_downloader.calls
    epoch = iter(dataset)
    first = [next(epoch) for _ in range(4)]
    deadline = time.monotonic() + 10
    while len(calls) < 9 and time.monotonic() < deadline:
        time.sleep(0.01)
    # With 4 samples consumed, the videos of the predownload (6) samples from the 4th on were
    # fetched too (9 in all): the reach grows from the first sample alone to the window.
    assert len(calls) == 9
    samples = first + list(epoch)
    assert len(samples) == cases.NUM_SAMPLES
    for sample in samples:
        index = int(sample["caption"].split()[1])
        assert sample["content"] == cases.video_bytes(index)
    assert sorted(calls) == sorted({os.path.basename(cases.video_name(i))
                                    for i in range(cases.NUM_SAMPLES)})


def test_webvid_gi_downloads_as_samples_are_read(tmp_path):
    from streaming.multimodal import StreamingOutsideGIWebVid

    dataset = _webvid(StreamingOutsideGIWebVid, tmp_path, predownload=6)
    epoch = iter(dataset)
    next(epoch)
    time.sleep(0.2)
    assert len(dataset._extra_downloader.calls) == 1
    assert len(list(epoch)) == cases.NUM_SAMPLES - 1
    assert len(dataset._extra_downloader.calls) == cases.NUM_SAMPLES


@pytest.mark.filterwarnings("ignore:Trying to partition")
def test_classes_through_dataloader_workers(standins, tmp_path):
    """Each DataLoader worker (forked) builds what its part of the epoch needs: the stand-in
    tokenizer, the videos' downloader; together they yield the direct epoch's samples."""
    from torch.utils.data import DataLoader

    from streaming.multimodal import StreamingOutsideDTWebVid
    from streaming.text import StreamingC4

    cases.write_dataset(MDSWriter, "text", str(tmp_path / "text"))
    c4 = StreamingC4(local=str(tmp_path / "text"), batch_size=4, shuffle=True,
                     tokenizer_name="stand-in", max_seq_len=8, group_method="truncate")
    direct = sorted(tuple(s["input_ids"]) for s in c4)
    loader = DataLoader(c4, batch_size=4, num_workers=2, collate_fn=list)
    assert sorted(tuple(s["input_ids"]) for batch in loader for s in batch) == direct

    cases.write_dataset(MDSWriter, "webvid_outside", str(tmp_path / "webvid"))
    cases.write_videos(str(tmp_path / "remote"))
    webvid = StreamingOutsideDTWebVid(local=str(tmp_path / "webvid"), batch_size=4,
                                      num_canonical_nodes=1,
                                      extra_remote=str(tmp_path / "remote"),
                                      extra_local=str(tmp_path / "cache"))
    loader = DataLoader(webvid, batch_size=4, num_workers=2, collate_fn=list)
    got = [s for batch in loader for s in batch]
    assert len(got) == cases.NUM_SAMPLES
    assert all(s["content"] == cases.video_bytes(int(s["caption"].split()[1])) for s in got)
