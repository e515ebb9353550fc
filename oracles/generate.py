"""Write the oracle fixtures: what mosaicml-streaming 0.13.0 does, as small JSON/NPZ files.

Runs inside the reference's isolated venv (``oracles/make_venv.sh``), never the project's:

    bash oracles/make_venv.sh && /work/refvenv/bin/python oracles/generate.py [AREA ...]

Each ``oracles/cases/<area>.py`` defines ``generate(outdir: pathlib.Path) -> None`` and writes
its fixtures under ``oracles/fixtures/<area>/``. With no AREA, every area is regenerated.
"""

from __future__ import annotations

import importlib.util
import pathlib
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    import streaming

    if not streaming.__version__ == "0.13.0" or "site-packages" not in streaming.__file__:
        raise SystemExit(f"run me in the reference venv; got streaming from {streaming.__file__}")
    areas = argv or sorted(p.stem for p in (HERE / "cases").glob("*.py") if p.stem[0] != "_")
    for area in areas:
        spec = importlib.util.spec_from_file_location(f"cases_{area}", HERE / "cases" / f"{area}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        outdir = HERE / "fixtures" / area
        shutil.rmtree(outdir, ignore_errors=True)
        outdir.mkdir(parents=True)
        module.generate(outdir)
        size = sum(p.stat().st_size for p in outdir.rglob("*") if p.is_file())
        print(f"{area}: {size / 1e6:.2f} MB in {outdir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
