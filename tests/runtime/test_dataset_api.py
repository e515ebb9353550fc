"""StreamingDataset's surface: validation, abbreviations, random access, eviction, pickling."""

from __future__ import annotations

import copy
import os
import pickle

import numpy as np
import pytest
from rt_helpers import write_dataset

from streaming import Stream, StreamingDataset
from streaming.util import bytes_to_int, clean_stale_shared_memory, number_abbrev_to_int, retry

PARAMS = {"num_samples": 120, "base": 0, "pad_mul": 3, "pad_mod": 11, "size_limit": 700,
          "compression": "zstd", "hashes": ["sha1"]}


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("api") / "remote")
    write_dataset(path, PARAMS)
    return path


def _pad(i):
    return b"\x07" * ((i * 3) % 11)


@pytest.mark.parametrize("kwargs, match", [
    ({"sampling_method": "nope"}, "Invalid sampling method"),
    ({"sampling_granularity": 0}, "sampling_granularity"),
    ({"batching_method": "nope"}, "Invalid batching method"),
    ({"shuffle_seed": -1}, "shuffle_seed"),
    ({"epoch_size": -5}, "Epoch size cannot be negative"),
    ({"cache_limit": "10b"}, "Minimum cache usage"),
    ({"cache_limit": 3000}, "too low"),
])
def test_argument_errors(remote, tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        StreamingDataset(remote=remote, local=str(tmp_path), batch_size=4, **kwargs)


def test_streams_xor_remote(remote, tmp_path):
    with pytest.raises(ValueError, match="either `streams` or `remote`/`local`"):
        StreamingDataset(streams=[Stream(remote=remote, local=str(tmp_path))], remote=remote)


def test_stream_weight_errors():
    with pytest.raises(ValueError, match="At most one"):
        Stream(local="x", proportion=1, repeat=2)
    with pytest.raises(ValueError, match="non-negative"):
        Stream(local="x", choose=-1)
    with pytest.raises(ValueError, match="positive"):
        Stream(local="x", download_timeout=0)


def test_epoch_size_and_cache_limit_strings(remote, tmp_path):
    ds = StreamingDataset(remote=remote, local=str(tmp_path), batch_size=4, epoch_size="1k",
                          cache_limit="1mb")
    assert ds.epoch_size == 1000 and len(ds) == 1000 and ds.cache_limit == 1 << 20
    assert ds.size == 120
    ids = [int(s["id"]) for s in ds]
    assert len(ids) == 1000 and set(ids) == set(range(120))


def test_random_access_prepares_shards(remote, tmp_path):
    ds = StreamingDataset(remote=remote, local=str(tmp_path), batch_size=4)
    assert ds.cache_usage == os.path.getsize(os.path.join(remote, "index.json"))
    for i in (119, 0, 57, -1):
        sample = ds[i]
        j = i % 120
        assert int(sample["id"]) == j and sample["pad"] == _pad(j)
    assert [int(s["id"]) for s in ds[3:6]] == [3, 4, 5]
    with pytest.raises(IndexError):
        ds.get_item(120)
    assert ds.cache_usage > os.path.getsize(os.path.join(remote, "index.json"))


def test_evict_and_reprepare(remote, tmp_path):
    ds = StreamingDataset(remote=remote, local=str(tmp_path), batch_size=4)
    ds.prepare_shard(0)
    raw = os.path.join(str(tmp_path), ds.shards[0].file_pairs[0][0].basename)
    assert os.path.exists(raw)
    ds.evict_shard(0)
    assert not os.path.exists(raw)
    assert int(ds[0]["id"]) == 0  # prepared again on access
    ds.prepare_shard(1)
    ds.evict_coldest_shard()
    ds.evict_coldest_shard()
    with pytest.raises(ValueError, match="no shards present"):
        ds.evict_coldest_shard()
    for method in (ds.evict_shard, ds.prepare_shard):  # the reference's message, both
        with pytest.raises(IndexError, match=f"^index 99 is out of bounds for axis 0 with size "
                                             f"{ds.num_shards}$"):
            method(99)


def test_local_only_shards_are_never_evicted(tmp_path):
    local = str(tmp_path / "data")
    write_dataset(local, dict(PARAMS, compression=None, hashes=None))
    ds = StreamingDataset(local=local, batch_size=4)
    with pytest.raises(ValueError, match="no remote copy"):
        ds.evict_shard(0)
    assert sorted(int(s["id"]) for s in ds) == list(range(120))


def test_validate_hash_detects_corruption(remote, tmp_path):
    local = str(tmp_path / "local")
    ds = StreamingDataset(remote=remote, local=local, batch_size=4, validate_hash="sha1")
    zip_name = ds.shards[0].file_pairs[0][1].basename
    # Corrupt the cached compressed copy before it is decompressed.
    os.makedirs(local, exist_ok=True)
    with open(os.path.join(remote, zip_name), "rb") as f:
        data = bytearray(f.read())
    data[-1] ^= 0xFF
    with open(os.path.join(local, zip_name), "wb") as f:
        f.write(bytes(data))
    with pytest.raises(ValueError, match="Checksum failure"):
        ds.get_item(0, retry=0)
    assert not os.path.exists(os.path.join(local, zip_name))  # a bad copy is not kept
    assert int(ds[0]["id"]) == 0  # next access downloads a good copy


def test_pickle_round_trip_and_epochs(remote, tmp_path):
    ds = StreamingDataset(remote=remote, local=str(tmp_path), batch_size=4, shuffle=True)
    first = [int(s["id"]) for s in ds]
    assert ds.next_epoch == 1
    copy = pickle.loads(pickle.dumps(ds))
    second = [int(s["id"]) for s in copy]  # the copy shares the run: this is epoch 1
    assert ds.next_epoch == 2
    assert sorted(first) == sorted(second) == list(range(120)) and first != second
    ds.next_epoch = 0
    assert [int(s["id"]) for s in ds] == first


def test_copies_while_an_iterator_is_live(remote, tmp_path):
    # The reference raises "cannot pickle '_thread.RLock' object" here (its iteration's lock).
    ds = StreamingDataset(remote=remote, local=str(tmp_path), batch_size=4, shuffle=True)
    it = iter(ds)
    head = [int(next(it)["id"]) for _ in range(10)]
    for clone in (pickle.loads(pickle.dumps(ds)), copy.deepcopy(ds)):
        assert int(clone[5]["id"]) == 5
        assert sorted(int(s["id"]) for s in clone) == list(range(120))
    rest = [int(s["id"]) for s in it]  # the original's epoch goes on where it was
    assert sorted(head + rest) == list(range(120))


def test_an_older_iterator_runs_to_its_end(remote, tmp_path):
    # The reference ends an iterator when a newer one over the same dataset starts ("only one
    # epoch is valid at a time"): there the rest below is empty and zip(ds, ds) yields one pair.
    ds = StreamingDataset(remote=remote, local=str(tmp_path), batch_size=4, shuffle=True)
    epochs = [[int(s["id"]) for s in ds] for _ in range(2)]
    ds.next_epoch = 0
    older = iter(ds)
    head = [int(next(older)["id"]) for _ in range(3)]
    assert [int(s["id"]) for s in ds] == epochs[1]  # the newer one: the next epoch
    assert head + [int(s["id"]) for s in older] == epochs[0]
    assert len(list(zip(ds, ds))) == 120


def test_state_dict_resume_mid_epoch(remote, tmp_path):
    ds = StreamingDataset(remote=remote, local=str(tmp_path / "a"), batch_size=4, shuffle=True)
    order = [int(s["id"]) for s in ds]
    state = ds.state_dict(40, True)
    assert state == {"epoch": 0, "sample_in_epoch": 40, "num_canonical_nodes": 1,
                     "shuffle_seed": 9176, "initial_physical_nodes": 1}
    resumed = StreamingDataset(remote=remote, local=str(tmp_path / "b"), batch_size=4,
                               shuffle=True)
    resumed.load_state_dict(state)
    assert [int(s["id"]) for s in resumed] == order[40:]
    assert resumed.state_dict(8, False)["sample_in_epoch"] == 48


def test_util_parsers():
    assert bytes_to_int("100b") == 100 and bytes_to_int("64kb") == 65536
    assert bytes_to_int("1.5gb") == int(1.5 * 1024**3) and bytes_to_int(7) == 7
    assert number_abbrev_to_int("64M") == 64_000_000 and number_abbrev_to_int("77b") == 77 * 10**9
    assert number_abbrev_to_int("123") == 123
    for bad in ("12qb", "abc", "-5"):
        with pytest.raises(ValueError, match="Unsupported value/suffix"):
            bytes_to_int(bad)
    with pytest.raises(ValueError, match="Unsupported value/suffix"):
        number_abbrev_to_int("1x")
    assert clean_stale_shared_memory() is None


def test_retry_decorator(monkeypatch):
    import streaming.util

    sleeps = []
    monkeypatch.setattr(streaming.util.time, "sleep", sleeps.append)
    calls = []

    @retry(RuntimeError, num_attempts=3, initial_backoff=0.001, max_jitter=0)
    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("again")
        return "ok"

    assert flaky() == "ok" and len(calls) == 3

    @retry
    def bare():
        raise KeyError("x")

    with pytest.raises(KeyError):
        bare()
    assert len(sleeps) == 2 + 2 and sleeps[2] >= 1.0 and sleeps[3] >= 2.0  # backoff doubles
    with pytest.raises(ValueError):
        retry(num_attempts=0)


def test_random_access_after_another_process_evicts(remote, tmp_path):
    """A mapped shard evicted by another dataset on the same cache (as by another process) is
    still read through its map; once its reader is closed (as by the limit of open maps), the
    next access prepares it again."""
    ds = StreamingDataset(remote=remote, local=str(tmp_path), batch_size=4)
    assert int(ds[5]["id"]) == 5
    shard_id = ds.spanner[5][0]
    assert ds.spanner[6][0] == shard_id
    raw = os.path.join(str(tmp_path), ds.shards[shard_id].file_pairs[0][0].basename)
    other = StreamingDataset(remote=remote, local=str(tmp_path), batch_size=4)
    other.evict_shard(shard_id)
    assert not os.path.exists(raw)
    assert int(ds[6]["id"]) == 6 and ds[6]["pad"] == _pad(6)
    ds.shards[shard_id].close()
    assert int(ds[5]["id"]) == 5 and ds[5]["pad"] == _pad(5)
    assert os.path.exists(raw)


def test_generate_work_takes_the_dataset_and_world_as_the_reference_does(tmp_path):
    """``streaming.base.batching.generate_work(method, dataset=..., world=World(...))``, as the
    reference's callers write it, plans what the dataset's spec and the world's shape plan."""
    from streaming.base.batching import generate_work
    from streaming.base.world import World

    streams = []
    for k, n in enumerate([200, 300]):
        params = dict(PARAMS, num_samples=n, base=1000 * k, size_limit=1 << 10)
        write_dataset(str(tmp_path / f"s{k}"), params)
        streams.append(Stream(local=str(tmp_path / f"s{k}")))
    ds = StreamingDataset(streams=streams, batch_size=4, num_canonical_nodes=8, shuffle=True,
                          batching_method="per_stream", shuffle_block_size=100)
    world = World(num_nodes=2, ranks_per_node=2, workers_per_rank=2, worker=0)
    work = generate_work(batching_method="device_per_stream", dataset=ds, world=world, epoch=0,
                         sample_in_epoch=0)
    assert np.array_equal(work, generate_work("device_per_stream", ds._plan_spec(), (2, 2, 2),
                                              0, 0))
    assert work.shape[:3] == (2, 2, 2) and work.shape[4] == 4
    # Each device batch, in training order, comes from one stream (ids < 200 are stream 0's).
    batches = work.transpose(3, 2, 0, 1, 4).reshape(-1, 4)
    batches = batches[(batches >= 0).all(axis=1)]
    assert len(batches) and all((b < 200).all() or (b >= 200).all() for b in batches)
    # Before its first epoch, a dataset left to default its canonical nodes has none yet.
    fresh = StreamingDataset(streams=[Stream(local=s.local) for s in streams], batch_size=4)
    with pytest.raises(RuntimeError, match="`num_canonical_nodes` can never be None"):
        generate_work("random", fresh, world, 0, 0)
