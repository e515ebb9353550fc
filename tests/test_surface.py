"""The reference's public surface exists here: module paths, names, constructor signatures."""

from __future__ import annotations

import importlib
import inspect
import json
import pathlib
import pkgutil

import pytest

_SURFACE = json.loads(
    (pathlib.Path(__file__).resolve().parent.parent / "oracles" / "fixtures" / "api" / "surface.json")
    .read_text()
)

# Internals of the reference's POSIX shared-memory coordination, which this package replaces by
# files in the cache directory; see docs/compatibility.md.
_NOT_PROVIDED = {
    "streaming.base.shared.array", "streaming.base.shared.barrier", "streaming.base.shared.scalar",
}
_NOT_PROVIDED_NAMES = {"SharedArray", "SharedBarrier", "SharedScalar", "get_shm_prefix"}


@pytest.mark.parametrize(("module", "names"), sorted(_SURFACE["modules"].items()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_module_exports_reference_names(module, names):
    if module in _NOT_PROVIDED:
        pytest.skip(f"{module}: reference internals not provided (docs/compatibility.md)")
    mod = importlib.import_module(module)
    missing = [n for n in names if not hasattr(mod, n) and n not in _NOT_PROVIDED_NAMES]
    assert not missing, f"{module} lacks {missing}"


@pytest.mark.parametrize(("path", "params"), sorted(_SURFACE["signatures"].items()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_signature_matches_reference(path, params):
    func = pkgutil.resolve_name(path)
    ours = inspect.signature(func).parameters
    # Every reference parameter exists here, by name, kind and default (new ones may follow).
    for name, kind, default in params:
        assert name in ours, f"{path}: missing parameter {name!r}"
        p = ours[name]
        # A parameter the reference requires may have a default here; never the reverse.
        if kind != "VAR_KEYWORD" and default != "<no default>":
            got = "<no default>" if p.default is inspect.Parameter.empty else repr(p.default)
            assert got == default, f"{path}({name}=...): default {got} != reference {default}"
    ref_names = [p[0] for p in params if p[1] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
    our_names = [n for n, p in ours.items()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][:len(ref_names)]
    assert our_names == ref_names, f"{path}: positional order {our_names} != {ref_names}"
