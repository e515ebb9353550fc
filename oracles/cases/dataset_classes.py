"""The reference's ready-made dataset classes (``streaming.text``, ``.vision``, ``.multimodal``):
what ``get_item`` returns and what a shuffled epoch yields, with deterministic stand-ins for the
tokenizer and torchvision (see ``_dataset_classes_cases.py``), and their argument errors.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import pathlib
import sys
import tempfile

_spec = importlib.util.spec_from_file_location(
    "_dataset_classes_cases", pathlib.Path(__file__).with_name("_dataset_classes_cases.py"))
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)


def _import_class(module: str, name: str) -> type:
    return getattr(importlib.import_module(module), name)


def generate(outdir: pathlib.Path) -> None:
    # The reference imports these at module level: its AutoTokenizer and to_tensor are the
    # module globals the classes call (torchvision is a stand-in in the oracle venv).
    import streaming.text.c4
    import streaming.text.pile
    import streaming.vision.base
    from streaming import MDSWriter

    for module in (streaming.text.c4, streaming.text.pile):
        module.AutoTokenizer = cases.StandInAutoTokenizer
    streaming.vision.base.to_tensor = cases.to_tensor
    assert "transformers" in sys.modules
    out = {"cases": {}, "errors": {}}
    with tempfile.TemporaryDirectory() as workdir:
        for name in cases.CASES:
            out["cases"][name] = cases.run_case(name, MDSWriter, workdir, _import_class)
        for name in cases.ERRORS:
            out["errors"][name] = cases.run_error(name, MDSWriter, workdir, _import_class)
    (outdir / "dataset_classes.json").write_text(json.dumps(out, indent=0, sort_keys=True))
