"""Reading a shard in order does not leave all of it mapped (resident) in the process."""

from __future__ import annotations

import os

import numpy as np
import pytest

from streaming import MDSWriter, StreamingDataset

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="Linux only")


def _mapped_kb(path: str) -> int | None:
    """Resident KB of this process's mapping of ``path`` (None if not mapped)."""
    rss, inside = None, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if len(head) >= 5 and "-" in head[0] and ":" in head[3]:  # a mapping's first line
                inside = line.rstrip("\n").endswith(path)
            elif inside and line.startswith("Rss:"):
                rss = (rss or 0) + int(line.split()[1])
    return rss


@pytest.mark.parametrize(("shuffle", "width"), [(False, 2048), (True, 2048), (False, 16)])
def test_in_order_reading_unmaps_pages_behind(tmp_path, shuffle, width) -> None:
    out = str(tmp_path / "data")
    rows = 4096 if width > 16 else 1 << 17  # 32 MB or 8 MB (small rows) in one shard
    with MDSWriter(out=out, columns={"tokens": f"ndarray:int32:{width}"},
                   size_limit=1 << 27) as w:
        for i in range(rows):
            w.write({"tokens": np.full(width, i, np.int32)})
    shard = os.path.realpath(os.path.join(out, "shard.00000.mds"))
    ds = StreamingDataset(local=out, batch_size=8, shuffle=shuffle)
    seen = 0
    for i, sample in enumerate(ds):
        assert sample["tokens"][0] == sample["tokens"][-1]
        seen += 1
        if i == rows // 2:
            assert _mapped_kb(shard) is not None  # still open and mapped mid-epoch
    assert seen == rows
    mapped = _mapped_kb(shard)
    size_kb = os.path.getsize(shard) // 1024
    if shuffle:
        # Out of order, pages are kept (dropping them would cost a page fault per row).
        assert mapped is None or mapped <= size_kb + 64
    else:
        # What stays mapped is about the last block read (the kernel maps large page-cache
        # folios whole, up to 2 MB at a time), not the shard.
        assert mapped is not None and mapped < size_kb // 4, (mapped, size_kb)
