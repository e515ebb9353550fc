"""The reference's public surface: module paths, public names, and constructor signatures."""

from __future__ import annotations

import importlib
import inspect
import json
import pathlib
import pkgutil

# Modules that exist only for the reference's shared-memory machinery are still listed: the test
# decides what it requires. The ready-made datasets' conversion scripts (command-line programs
# needing datasets, torchvision's real datasets, ...) are not part of the surface.
_SKIP_PREFIXES = ("streaming.vision.convert", "streaming.text.convert",
                  "streaming.multimodal.convert")

# Public classes/functions whose signatures users call with keywords.
_SIGNATURES = [
    "streaming.StreamingDataset.__init__",
    "streaming.Stream.__init__",
    "streaming.StreamingDataLoader.__init__",
    "streaming.LocalDataset.__init__",
    "streaming.MDSWriter.__init__",
    "streaming.JSONWriter.__init__",
    "streaming.XSVWriter.__init__",
    "streaming.CSVWriter.__init__",
    "streaming.TSVWriter.__init__",
    "streaming.StreamingDataset.state_dict",
    "streaming.StreamingDataset.load_state_dict",
    "streaming.StreamingDataset.resample_streams",
    "streaming.base.util.merge_index",
    "streaming.base.util.get_list_arg",
    "streaming.base.util.bytes_to_int",
    "streaming.base.util.number_abbrev_to_int",
    "streaming.base.util.retry",
    "streaming.base.shuffle.get_shuffle",
    "streaming.base.partition.get_partitions",
    "streaming.base.converters.dataframe_to_mds",
    "streaming.base.storage.download.download_file",
    "streaming.base.storage.upload.CloudUploader.get",
    "streaming.base.shared.SharedMemory.__init__",
    "streaming.text.StreamingC4.__init__",
    "streaming.text.StreamingEnWiki.__init__",
    "streaming.text.StreamingPile.__init__",
    "streaming.vision.base.StreamingVisionDataset.__init__",
    "streaming.vision.base.StandardTransform.__init__",
    "streaming.vision.StreamingCIFAR10.__init__",
    "streaming.vision.StreamingImageNet.__init__",
    "streaming.vision.StreamingADE20K.__init__",
    "streaming.vision.StreamingCOCO.__init__",
    "streaming.multimodal.StreamingInsideWebVid.__init__",
    "streaming.multimodal.StreamingOutsideGIWebVid.__init__",
    "streaming.multimodal.StreamingOutsideDTWebVid.__init__",
]


def _params(func) -> list[list]:
    out = []
    for p in inspect.signature(func).parameters.values():
        default = "<no default>" if p.default is inspect.Parameter.empty else repr(p.default)
        out.append([p.name, p.kind.name, default])
    return out


def _is_own(obj, module: str | None) -> bool:
    """A name users import from a module: a package's exports, a module's own classes/functions.

    Classes and functions a plain module merely imports from elsewhere are left out; constants
    (simple values) are kept, since they cannot be told apart.
    """
    if inspect.ismodule(obj):
        return False
    if inspect.isclass(obj) or inspect.isfunction(obj):
        owner = getattr(obj, "__module__", "")
        return owner == module if module else owner.startswith("streaming")
    return isinstance(obj, (int, float, str, tuple, dict, list)) and not isinstance(obj, bool)


def generate(outdir: pathlib.Path) -> None:
    import streaming

    modules = {}
    for info in pkgutil.walk_packages(streaming.__path__, "streaming."):
        name = info.name
        if name.startswith(_SKIP_PREFIXES) or ".shared." in name and name.endswith("_test"):
            continue
        try:
            module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - optional backends missing in the oracle venv
            continue
        is_package = hasattr(module, "__path__")
        public = sorted(n for n in dir(module) if not n.startswith("_")
                        and _is_own(getattr(module, n), None if is_package else name))
        modules[name] = public
    signatures = {}
    for path in _SIGNATURES:
        try:
            signatures[path] = _params(pkgutil.resolve_name(path))
        except (ImportError, AttributeError):  # needs an optional package (pyspark)
            continue
    (outdir / "surface.json").write_text(
        json.dumps({"modules": modules, "signatures": signatures}, indent=1, sort_keys=True))
