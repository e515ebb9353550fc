#!/usr/bin/env bash
# Build the isolated venv that holds the reference, mosaicml-streaming 0.13.0, for the oracles and
# the benchmarks. It lives outside the checkout (default /work/refvenv; override with REF_VENV)
# because the reference and this project both own the `streaming` import.
set -euo pipefail
REF_VENV="${REF_VENV:-/work/refvenv}"
if [ ! -x "$REF_VENV/bin/python" ]; then
  python3 -m venv "$REF_VENV"
fi
"$REF_VENV/bin/pip" install -q torch==2.13.0 mosaicml-streaming==0.13.0 pillow
# PyPI's torchvision does not import beside torch 2.13.0; the reference imports it only for
# streaming.vision, which the oracles never use. Replace it by a stand-in with the few names that
# `import streaming` touches.
SITE="$("$REF_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
rm -rf "$SITE"/torchvision "$SITE"/torchvision-*.dist-info "$SITE"/torchvision.libs
mkdir -p "$SITE/torchvision/transforms"
cat > "$SITE/torchvision/__init__.py" <<'PY'
"""Stand-in for torchvision: enough for `import streaming` (reference) to succeed."""
from torchvision import datasets, transforms  # noqa: F401
PY
cat > "$SITE/torchvision/datasets.py" <<'PY'
class VisionDataset:
    def __init__(self, *args, **kwargs):
        raise RuntimeError('torchvision stand-in: streaming.vision is not usable here')


class CIFAR10(VisionDataset):
    pass
PY
cat > "$SITE/torchvision/transforms/__init__.py" <<'PY'
from torchvision.transforms import functional  # noqa: F401
PY
cat > "$SITE/torchvision/transforms/functional.py" <<'PY'
def to_tensor(*args, **kwargs):
    raise RuntimeError('torchvision stand-in: to_tensor is not available')
PY
(cd / && "$REF_VENV/bin/python" -c 'import streaming; print("reference", streaming.__version__, "ready in", __import__("sys").prefix)')
