"""StreamingDataLoader's in-process batching equals torch's own, batch for batch.

With ``num_workers=0`` and the default ``collate_fn`` the loader batches the dataset's samples
itself and stacks arrays straight into the batch tensor (``streaming.collate.collate_batch``). These
tests hold it to exactly what torch's ``default_collate`` and single-process loader make.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import default_collate
from torch.utils.data._utils import collate as torch_collate

from streaming import StreamingDataLoader, StreamingDataset
from streaming.collate import collate_batch as _collate


def _same(a, b) -> None:
    assert type(a) is type(b)
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
        assert a.is_contiguous() == b.is_contiguous()
        a.resize_(0)  # the storage is the tensor's own, as torch's stack makes it
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b


def _outcome(func, batch):
    try:
        return "ok", func(batch)
    except (TypeError, ValueError, RuntimeError) as err:
        return type(err).__name__, None


DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "float16",
          "float32", "float64", "complex64", ">i4", "U3", "O"]


@st.composite
def batches(draw):
    size = draw(st.integers(1, 5))
    keys = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=3,
                         unique=True))
    columns = {}
    for key in keys:
        kind = draw(st.sampled_from(["array", "int", "float", "str", "bytes", "number"]))
        if kind == "array":
            dtype = np.dtype(draw(st.sampled_from(DTYPES)))
            shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
            ragged = draw(st.booleans()) and size > 1
            values = []
            for i in range(size):
                here = shape + (1,) if ragged and i == size - 1 else shape
                n = int(np.prod(here))
                values.append(np.arange(n).astype(dtype).reshape(here))
            if draw(st.booleans()) and size > 1 and dtype.kind != "c":  # another dtype
                values[-1] = values[-1].astype(np.float64)
            if draw(st.booleans()) and shape and not ragged:  # a row not C-contiguous
                k = draw(st.integers(0, size - 1))
                values[k] = np.repeat(values[k], 2, axis=-1)[..., ::2]
            columns[key] = values
        elif kind == "int":
            ints = st.integers(-5, 5) | st.integers(-2**70, 2**70)  # (past int64: torch errs)
            columns[key] = draw(st.lists(ints, min_size=size, max_size=size))
        elif kind == "number":  # mixed scalar types: torch decides
            numbers = st.integers(-5, 5) | st.floats(-1, 1) | st.booleans()
            columns[key] = draw(st.lists(numbers, min_size=size, max_size=size))
        elif kind == "float":
            columns[key] = draw(st.lists(st.floats(allow_nan=False), min_size=size, max_size=size))
        elif kind == "str":
            columns[key] = draw(st.lists(st.text(max_size=3), min_size=size, max_size=size))
        else:
            columns[key] = draw(st.lists(st.binary(max_size=3), min_size=size, max_size=size))
    return [{key: columns[key][i] for key in keys} for i in range(size)]


@settings(max_examples=200, deadline=None)
@given(batches())
def test_collate_equals_default_collate(batch) -> None:
    got, want = _outcome(_collate, batch), _outcome(default_collate, batch)
    assert got[0] == want[0]
    if got[0] == "ok":
        _same(got[1], want[1])


def test_collate_defers_to_a_customised_registry(monkeypatch) -> None:
    def as_lists(batch, *, collate_fn_map=None):
        return [b.tolist() for b in batch]

    monkeypatch.setitem(torch_collate.default_collate_fn_map, np.ndarray, as_lists)
    batch = [{"x": np.arange(3)}, {"x": np.arange(3)}]
    assert _collate(batch) == default_collate(batch) == {"x": [[0, 1, 2], [0, 1, 2]]}
    # Not dicts: torch's own path.
    assert torch.equal(_collate([1, 2]), default_collate([1, 2]))


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("rows", ["token_dataset", "text_dataset"])
def test_loader_batches_equal_torch_loader(request, rows, shuffle, drop_last) -> None:
    # Token rows are batched one by one; text rows (ints, strings, bytes) a column at a time.
    local = request.getfixturevalue(rows)

    def make(collate_fn=None):
        ds = StreamingDataset(local=local, shuffle=shuffle, batch_size=8)
        kwargs = {} if collate_fn is None else {"collate_fn": collate_fn}
        return StreamingDataLoader(ds, batch_size=8, num_workers=0, drop_last=drop_last,
                                   **kwargs)

    fast = make()
    slow = make(lambda batch: default_collate(batch))  # not the default: torch's own loop
    assert fast._batches_in_process() and not slow._batches_in_process()
    for epoch in range(2):
        torch.manual_seed(epoch)
        got = list(fast)
        state_fast = torch.get_rng_state()
        torch.manual_seed(epoch)
        want = list(slow)
        assert torch.equal(state_fast, torch.get_rng_state())  # the same seed draw as torch
        assert len(got) == len(want) == (203 // 8 if drop_last else -(-203 // 8))
        _same(got, want)
        assert fast.num_samples_yielded == slow.num_samples_yielded
        assert fast.state_dict() == slow.state_dict()


def test_loader_resumes_mid_epoch_in_process(token_dataset) -> None:
    ds = StreamingDataset(local=token_dataset, shuffle=True, batch_size=8)
    loader = StreamingDataLoader(ds, batch_size=8)
    ids = []
    for i, batch in enumerate(loader):
        ids += batch["id"].tolist()
        if i == 5:
            state = loader.state_dict()
            break
    ds2 = StreamingDataset(local=token_dataset, shuffle=True, batch_size=8)
    loader2 = StreamingDataLoader(ds2, batch_size=8)
    loader2.load_state_dict(state)
    rest = [i for batch in loader2 for i in batch["id"].tolist()]
    full = [i for batch in StreamingDataLoader(
        StreamingDataset(local=token_dataset, shuffle=True, batch_size=8), batch_size=8)
        for i in batch["id"].tolist()]
    assert ids + rest == full
    assert sorted(full) == list(range(203))


def test_loader_warns_past_reported_length(token_dataset) -> None:
    ds = StreamingDataset(local=token_dataset, batch_size=8)
    loader = StreamingDataLoader(ds, batch_size=8)
    loader._IterableDataset_len_called = 3  # as if len(loader) had said 3
    with pytest.warns(UserWarning, match="was reported to be 3") as caught:
        batches = [batch for batch in loader]  # (list() would call len() first)
    assert len(batches) == 26
    assert len([w for w in caught if "was reported" in str(w.message)]) == 26 - 3


def test_plan_ids_outside_the_dataset_are_refused(token_dataset, monkeypatch) -> None:
    ds = StreamingDataset(local=token_dataset, batch_size=8)
    good = ds._get_work
    monkeypatch.setattr(ds, "_get_work", lambda *a: np.append(good(*a), [203]))
    with pytest.raises(RuntimeError, match="sample id 203, outside the dataset's 203 samples"):
        list(ds)
