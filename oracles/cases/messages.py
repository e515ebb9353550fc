"""The reference's log records and warnings for a set of ``StreamingDataset`` configurations
(``_messages_cases.py``): the defaults it announces, the warnings it gives.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import tempfile

_spec = importlib.util.spec_from_file_location(
    "_messages_cases", pathlib.Path(__file__).with_name("_messages_cases.py"))
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)


def generate(outdir: pathlib.Path) -> None:
    import streaming

    out = {}
    with tempfile.TemporaryDirectory() as workdir:
        root = pathlib.Path(workdir) / "data"
        cases.write_datasets(streaming.MDSWriter, str(root))
        for name in cases.CASES:
            out[name] = cases.run_case(name, streaming, str(root),
                                       str(pathlib.Path(workdir) / "local" / name))
    (outdir / "messages.json").write_text(json.dumps(out, indent=1, sort_keys=True))
