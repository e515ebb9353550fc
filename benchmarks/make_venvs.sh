#!/usr/bin/env bash
# Build the isolated venvs the benchmarks compare against (idempotent):
#   $BENCH_VENVS/neprr    neprr-streaming (Rust-native MDS loader/writer)
#   $BENCH_VENVS/litdata  litdata (Lightning's streaming format)
# and the reference venv (mosaicml-streaming 0.13.0, default /work/refvenv) via
# oracles/make_venv.sh. Each lives outside the checkout because several own the `streaming`
# import. torch==2.13.0 goes in first so no CUDA build is pulled.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BENCH_VENVS="${BENCH_VENVS:-/work/benchvenvs}"
REF_VENV="${REF_VENV:-/work/refvenv}"
mkdir -p "$BENCH_VENVS"

# A stand-in for torchvision: PyPI's torchvision does not import beside torch 2.13.0 here, and
# the peers only import it optionally (or not at all in the paths benchmarked).
stub_torchvision() {
  local py="$1"
  local site
  site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  if [ -d "$site/torchvision" ] && "$py" -c 'import torchvision' 2>/dev/null; then
    return
  fi
  rm -rf "$site"/torchvision "$site"/torchvision-*.dist-info "$site"/torchvision.libs
  mkdir -p "$site/torchvision/transforms"
  printf '"""Stand-in for torchvision (benchmarks only)."""\nfrom torchvision import datasets, transforms  # noqa: F401\n__version__ = "0.0.0"\n' \
    > "$site/torchvision/__init__.py"
  printf 'class VisionDataset:\n    def __init__(self, *a, **k):\n        raise RuntimeError("torchvision stand-in")\n\n\nclass CIFAR10(VisionDataset):\n    pass\n' \
    > "$site/torchvision/datasets.py"
  printf 'from torchvision.transforms import functional  # noqa: F401\n' > "$site/torchvision/transforms/__init__.py"
  printf 'def to_tensor(*a, **k):\n    raise RuntimeError("torchvision stand-in")\n' > "$site/torchvision/transforms/functional.py"
}

make_one() {
  local name="$1"; shift
  local venv="$BENCH_VENVS/$name"
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install -q torch==2.13.0
  "$venv/bin/pip" install -q "$@" psutil
  stub_torchvision "$venv/bin/python"
}

make_one neprr "neprr-streaming[writer]==0.1.0"
"$BENCH_VENVS/neprr/bin/python" -c 'import importlib.metadata as m; print("neprr-streaming", m.version("neprr-streaming"), "ready")'
make_one litdata "litdata"
"$BENCH_VENVS/litdata/bin/python" -c 'import litdata; print("litdata", litdata.__version__, "ready")'

if [ ! -x "$REF_VENV/bin/python" ] || ! "$REF_VENV/bin/python" -c 'import streaming' 2>/dev/null; then
  REF_VENV="$REF_VENV" bash "$HERE/../oracles/make_venv.sh"
fi
echo "benchmark venvs ready under $BENCH_VENVS (reference: $REF_VENV)"
