"""The ready-made dataset classes' cases (``streaming.text``, ``.vision``, ``.multimodal``).

Shared by ``oracles/cases/dataset_classes.py`` (run in the reference venv) and
``tests/runtime/test_dataset_classes.py`` (run in the project venv): both write the same small
datasets (with their own ``MDSWriter``), build each class with the same arguments and the same
stand-ins for the packages those classes call (a Hugging Face tokenizer, torchvision's
``to_tensor``), and describe what ``get_item`` returns and what iteration yields, exactly.

The stand-ins are deterministic and record how they were called (a tokenizer's ``truncation``,
``padding``, ``max_length``), so a difference in what a class passes them shows in the outputs.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import random
import types
from typing import Any, Callable

import numpy as np

_spec = importlib.util.spec_from_file_location(
    "_mds_samples_for_dataset_classes", pathlib.Path(__file__).with_name("_mds_samples.py"))
_mds_samples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mds_samples)

NUM_SAMPLES = 24
SIZE_LIMIT = 1 << 10  # a few shards per dataset
BATCH_SIZE = 4

COLUMNS = {
    "text": {"text": "str", "timestamp": "str", "url": "str"},
    "enwiki": {name: "bytes" for name in (
        "input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
        "masked_lm_weights", "next_sentence_labels")},
    "image_class": {"x": "pil", "y": "int"},
    "ade20k": {"x": "png", "y": "png"},
    "coco": {"img": "png", "img_id": "int", "htot": "int", "wtot": "int",
             "bbox_sizes": "ndarray:float32", "bbox_labels": "ndarray:int64"},
    "webvid": {"content_path": "str", "caption": "str", "content": "bytes"},
    "webvid_outside": {"content_path": "str", "caption": "str"},
}


def _image(rng: random.Random, mode: str, size: tuple[int, int] | None = None) -> Any:
    from PIL import Image

    size = size or (rng.randint(2, 5), rng.randint(2, 5))
    bands = len(Image.new(mode, (1, 1)).getbands())
    data = bytes(rng.randrange(256) for _ in range(size[0] * size[1] * bands))
    return Image.frombytes(mode, size, data)


def video_name(index: int) -> str:
    return f"videos/{index % 5}/clip{index:03d}.mp4"


def video_bytes(index: int) -> bytes:
    return random.Random(1000 + index).randbytes(50 + index)


def make_samples(kind: str) -> list[dict[str, Any]]:
    """The samples of dataset ``kind`` (a key of :data:`COLUMNS`)."""
    rng = random.Random(f"dataset-classes-{kind}")
    out = []
    for i in range(NUM_SAMPLES):
        if kind == "text":
            words = [rng.choice(["stream", "shard", "epoch", "node", "é", "☃"])
                     for _ in range(rng.randint(0, 12))]
            out.append({"text": " ".join(words), "timestamp": f"2019-04-{i % 28 + 1:02d}",
                        "url": f"https://example.com/{i}"})
        elif kind == "enwiki":
            length = rng.randint(6, 16)
            masked = sorted(rng.sample(range(length), rng.randint(1, 3)))
            arrays = {
                "input_ids": np.array([rng.randrange(30000) for _ in range(length)], np.int32),
                "input_mask": np.ones(length, np.int32),
                "segment_ids": np.array([int(j > length // 2) for j in range(length)], np.int32),
                "masked_lm_positions": np.array(masked, np.int32),
                "masked_lm_ids": np.array([rng.randrange(30000) for _ in masked], np.int32),
                "masked_lm_weights": np.ones(len(masked), np.float32),
                "next_sentence_labels": np.array([rng.randrange(2)], np.int32),
            }
            out.append({k: v.tobytes() for k, v in arrays.items()})
        elif kind == "image_class":
            out.append({"x": _image(rng, rng.choice(["RGB", "L"])), "y": rng.randrange(10)})
        elif kind == "ade20k":
            image = _image(rng, "RGB")
            # Made at the image's size, not resized: resampling differs between Pillow releases.
            out.append({"x": image, "y": _image(random.Random(i), "L", image.size)})
        elif kind == "coco":
            image = _image(rng, rng.choice(["RGB", "L", "RGBA"]))
            boxes = rng.randint(1, 3)
            out.append({
                "img": image, "img_id": 1000 + i, "htot": image.size[1], "wtot": image.size[0],
                "bbox_sizes": np.array([[rng.random() for _ in range(4)] for _ in range(boxes)],
                                       np.float32).reshape(boxes, 4),
                "bbox_labels": np.array([rng.randrange(80) for _ in range(boxes)], np.int64),
            })
        elif kind in ("webvid", "webvid_outside"):
            sample = {"content_path": video_name(i), "caption": f"clip {i}"}
            if kind == "webvid":
                sample["content"] = video_bytes(i)
            out.append(sample)
        else:
            raise ValueError(kind)
    return out


def write_dataset(writer_cls: type, kind: str, out: str) -> None:
    """Write dataset ``kind`` to directory ``out`` with the given ``MDSWriter`` class."""
    with writer_cls(out=out, columns=COLUMNS[kind], size_limit=SIZE_LIMIT) as writer:
        for sample in make_samples(kind):
            writer.write(sample)


def write_videos(root: str) -> None:
    """The outside-the-shards videos of ``webvid_outside``, as files under ``root``."""
    for i in range(NUM_SAMPLES):
        path = os.path.join(root, video_name(i))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as file:
            file.write(video_bytes(i))


# ---- stand-ins for the packages the classes call -------------------------------------------


class StandInTokenizer:
    """A deterministic tokenizer: one id per character; records its call's arguments."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.eos_token = "</s>"
        self.pad_token = None if "nopad" in name else "<pad>"

    def __call__(self, text: str, truncation: Any = False, padding: Any = False,
                 max_length: Any = None) -> dict[str, Any]:
        ids = [ord(c) % 251 for c in text]
        if truncation and max_length is not None:
            ids = ids[:max_length]
        mask = [1] * len(ids)
        if padding == "max_length" and max_length is not None:
            pad = sum(map(ord, self.pad_token)) % 251  # a TypeError without a pad token
            ids += [pad] * (max_length - len(ids))
            mask += [0] * (max_length - len(mask))
        return {"input_ids": ids, "attention_mask": mask,
                "called_with": [truncation, padding, max_length, self.pad_token]}


class StandInAutoTokenizer:
    @staticmethod
    def from_pretrained(name: str) -> StandInTokenizer:
        return StandInTokenizer(name)


def transformers_module() -> types.ModuleType:
    """A ``transformers`` stand-in: ``AutoTokenizer.from_pretrained`` gives a stand-in."""
    module = types.ModuleType("transformers")
    module.AutoTokenizer = StandInAutoTokenizer
    return module


def to_tensor(image: Any) -> Any:
    """torchvision's ``to_tensor`` for 8-bit images: CHW float32 in [0, 1]."""
    import torch

    array = np.asarray(image, np.uint8)
    if array.ndim == 2:
        array = array[:, :, None]
    return torch.from_numpy(array.transpose(2, 0, 1).astype(np.float32) / 255)


def torchvision_modules() -> dict[str, types.ModuleType]:
    """A ``torchvision`` stand-in (``datasets.VisionDataset``, ``transforms.functional.to_tensor``),
    as the modules to put in ``sys.modules``."""
    from torch.utils.data import Dataset

    modules = {name: types.ModuleType(name) for name in (
        "torchvision", "torchvision.datasets", "torchvision.transforms",
        "torchvision.transforms.functional")}

    class VisionDataset(Dataset):
        def __repr__(self) -> str:
            return f"Dataset {type(self).__name__} (root {self.root})"

    modules["torchvision.datasets"].VisionDataset = VisionDataset
    modules["torchvision.transforms.functional"].to_tensor = to_tensor
    modules["torchvision"].datasets = modules["torchvision.datasets"]
    modules["torchvision"].transforms = modules["torchvision.transforms"]
    modules["torchvision.transforms"].functional = modules["torchvision.transforms.functional"]
    return modules


def flip(image: Any) -> Any:
    """An image transform: the image's bytes reversed, as an array."""
    return np.asarray(image)[::-1].copy()


def plus_one(label: Any) -> Any:
    return label + 1


def joint(pair: Any, *more: Any) -> Any:
    """A joint transform: ``(x, y)`` (ADE20K passes one tuple, vision's ``transforms`` two
    arguments) become ``(y, x)`` as arrays."""
    x, y = (pair, more[0]) if more else pair
    return np.asarray(y), np.asarray(x)


def coco_transform(img: Any, size: Any, bbox_sizes: Any, bbox_labels: Any) -> Any:
    return np.asarray(img).sum(), (size[1], size[0]), bbox_sizes * 2, bbox_labels[::-1].copy()


# ---- the cases -----------------------------------------------------------------------------

# name -> (module, class, dataset kind, constructor keywords beyond local/batch_size)
CASES: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "c4": ("streaming.text", "StreamingC4", "text",
           {"tokenizer_name": "stand-in", "max_seq_len": 8, "group_method": "truncate"}),
    "c4_nopad": ("streaming.text", "StreamingC4", "text",
                 {"tokenizer_name": "stand-in-nopad", "max_seq_len": 30,
                  "group_method": "truncate"}),
    "pile": ("streaming.text", "StreamingPile", "text",
             {"tokenizer_name": "stand-in", "max_seq_len": 5, "group_method": "truncate"}),
    "enwiki": ("streaming.text", "StreamingEnWiki", "enwiki", {}),
    "cifar10": ("streaming.vision", "StreamingCIFAR10", "image_class", {}),
    "cifar10_transform": ("streaming.vision", "StreamingCIFAR10", "image_class",
                          {"transform": flip, "target_transform": plus_one}),
    "imagenet_target": ("streaming.vision", "StreamingImageNet", "image_class",
                        {"target_transform": plus_one}),
    "imagenet_transforms": ("streaming.vision", "StreamingImageNet", "image_class",
                            {"transforms": joint}),
    "ade20k": ("streaming.vision", "StreamingADE20K", "ade20k", {}),
    "ade20k_transforms": ("streaming.vision", "StreamingADE20K", "ade20k",
                          {"joint_transform": joint, "transform": flip,
                           "target_transform": np.asarray}),
    "coco": ("streaming.vision", "StreamingCOCO", "coco", {}),
    "coco_transform": ("streaming.vision", "StreamingCOCO", "coco",
                       {"transform": coco_transform}),
    "webvid_inside": ("streaming.multimodal", "StreamingInsideWebVid", "webvid", {}),
    "webvid_gi": ("streaming.multimodal", "StreamingOutsideGIWebVid", "webvid_outside",
                  {"extra": True}),
    "webvid_dt": ("streaming.multimodal", "StreamingOutsideDTWebVid", "webvid_outside",
                  {"extra": True}),
    "webvid_gi_no_extra": ("streaming.multimodal", "StreamingOutsideGIWebVid", "webvid_outside",
                           {}),
}

# name -> (module, class, dataset kind, keywords): constructions that must raise ValueError.
ERRORS: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "c4_group_method": ("streaming.text", "StreamingC4", "text",
                        {"tokenizer_name": "stand-in", "max_seq_len": 8, "group_method": "concat"}),
    "pile_group_method": ("streaming.text", "StreamingPile", "text",
                          {"tokenizer_name": "stand-in", "max_seq_len": 8,
                           "group_method": "concat"}),
    "vision_both_transforms": ("streaming.vision", "StreamingCIFAR10", "image_class",
                               {"transforms": joint, "transform": flip}),
}


def describe(value: Any) -> Any:
    """:func:`_mds_samples.describe`, plus torch tensors."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"t": "tensor", "dtype": str(value.dtype), "shape": list(value.shape),
                "data": describe(value.numpy())["data"]}
    if isinstance(value, (list, tuple)):
        return {"t": type(value).__name__, "v": [describe(v) for v in value]}
    if isinstance(value, dict):
        return {"t": "dict", "v": [[k, describe(v)] for k, v in value.items()]}
    return _mds_samples.describe(value)


def run_case(name: str, writer_cls: type, workdir: str,
             import_class: Callable[[str, str], type]) -> dict[str, Any]:
    """Build case ``name``'s dataset and class; describe its items and one shuffled epoch
    (default shuffle arguments: each class's own defaults decide the order)."""
    module, cls_name, kind, kwargs = CASES[name]
    local = os.path.join(workdir, name, "data")
    write_dataset(writer_cls, kind, local)
    kwargs = dict(kwargs)
    if kwargs.pop("extra", False):
        kwargs["extra_remote"] = os.path.join(workdir, name, "videos-remote")
        kwargs["extra_local"] = os.path.join(workdir, name, "videos-local")
        write_videos(kwargs["extra_remote"])
    cls = import_class(module, cls_name)
    dataset = cls(local=local, batch_size=BATCH_SIZE, shuffle=True, **kwargs)
    items = [describe(dataset.get_item(i)) for i in range(len(dataset))]
    # The epoch as indices of equal items (the first, for samples alike), or a whole
    # description where none is equal.
    epoch = []
    for sample in dataset:
        described = describe(sample)
        epoch.append(items.index(described) if described in items else described)
    out = {"len": len(dataset), "items": items, "epoch": epoch}
    if hasattr(dataset, "tokenizer"):
        out["pad_token"] = dataset.tokenizer.pad_token
    if "extra_local" in kwargs:
        out["videos_cached"] = sorted(
            os.path.relpath(os.path.join(d, f), kwargs["extra_local"])
            for d, _, files in os.walk(kwargs["extra_local"]) for f in files)
    return out


def run_error(name: str, writer_cls: type, workdir: str,
              import_class: Callable[[str, str], type]) -> str:
    """The ValueError message case ``name``'s construction raises."""
    module, cls_name, kind, kwargs = ERRORS[name]
    local = os.path.join(workdir, name, "data")
    write_dataset(writer_cls, kind, local)
    try:
        import_class(module, cls_name)(local=local, batch_size=BATCH_SIZE, **kwargs)
    except ValueError as e:
        return str(e)
    raise AssertionError(f"{name}: no ValueError")
