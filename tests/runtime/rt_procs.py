"""Subprocess entry points of the runtime tests (importable by spawn and by ``python -m``)."""

from __future__ import annotations

import json
import os
import sys


def dist_rank(rank: int, world_size: int, port: int, spec_path: str, out_dir: str) -> None:
    """One rank of a real torch.distributed (gloo) run of an oracle case."""
    import torch.distributed as dist

    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank),
                      LOCAL_WORLD_SIZE=str(world_size))
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world_size)
    from rt_helpers import run_rank

    with open(spec_path) as f:
        job = json.load(f)
    result = run_rank(job["spec"], job["data_root"], job["local_root"])
    dist.barrier()
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)


def hang_while_downloading(remote: str, local: str, flag: str) -> None:
    """Start iterating, then block forever inside the second shard's download."""
    import streaming.storage.download as download_mod
    from streaming import StreamingDataset

    real = download_mod.download
    calls = []

    def slow_download(remote_url, local_path, **kwargs):
        calls.append(remote_url)
        if len(calls) >= 3:  # index, shard 0, then hang on shard 1 after a partial write
            with open(local_path + ".partial-junk", "wb") as f:
                f.write(b"junk")
            with open(flag, "w") as f:
                f.write("ready")
            import time
            while True:
                time.sleep(1)
        return real(remote_url, local_path, **kwargs)

    download_mod.download = slow_download
    ds = StreamingDataset(remote=remote, local=local, batch_size=4, predownload=1)
    for _ in ds:
        pass


def iterate_and_check(remote: str, local: str, cache_limit: int, seed: int, out: str) -> None:
    """Iterate a shuffled epoch under a cache limit, checking every sample's content."""
    from streaming import StreamingDataset

    ds = StreamingDataset(remote=remote, local=local, batch_size=4, shuffle=True,
                          shuffle_seed=seed, cache_limit=cache_limit, predownload=8)
    bad = []
    ids = []
    for sample in ds:
        i = int(sample["id"])
        ids.append(i)
        if sample["pad"] != b"\x07" * ((i * 7) % 23):
            bad.append(i)
    with open(out, "w") as f:
        json.dump({"ids": ids, "bad": bad}, f)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    name, args = sys.argv[1], json.loads(sys.argv[2])
    globals()[name](*args)
