"""Stand-in for the reference's ``tests/common/distributed.py``: a ``DistributedTest`` class's
test methods run in ``world_size`` forked processes (``@pytest.mark.world_size(n)``, default 1),
each a rank of a gloo process group on 127.0.0.1, all on one node (see the hook in
``tests/conftest.py``)."""

from __future__ import annotations

import inspect
import os
from typing import Any

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp
from _pytest.outcomes import Skipped

from tests.common.utils import get_free_tcp_port

# How long a rank may take before the test fails as hung.
RANK_TIMEOUT = 120


class DistributedTest:
    """Base class of tests whose methods run once per rank, in processes of their own."""

    is_dist_test = True
    world_size = 1

    def _run_test(self, request: Any) -> None:
        for mark in getattr(request.function, "pytestmark", []):
            if mark.name == "world_size":
                self.world_size = mark.args[0]
        self.port = get_free_tcp_port()
        self.current_test = getattr(self, request.function.__name__)
        names = inspect.getfullargspec(self.current_test).args[1:]  # (not self)
        self.test_kwargs = {name: request.getfixturevalue(name) for name in names}
        context = mp.get_context("fork")
        skipped = context.Queue()
        ranks = [context.Process(target=self._rank, args=(rank, skipped))
                 for rank in range(self.world_size)]
        for process in ranks:
            process.start()
        for process in ranks:
            process.join(RANK_TIMEOUT)
        for rank, process in enumerate(ranks):
            if process.exitcode is None:
                process.terminate()
                pytest.fail(f"rank {rank} hung", pytrace=False)
            if process.exitcode != 0:
                pytest.fail(f"rank {rank} exited with {process.exitcode}", pytrace=False)
        if not skipped.empty():
            pytest.skip(skipped.get())

    def _rank(self, rank: int, skipped: Any) -> None:
        # One node: every rank is also a local rank.
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(self.world_size), LOCAL_RANK=str(rank),
                          LOCAL_WORLD_SIZE=str(self.world_size), MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(self.port))
        dist.init_process_group(backend="gloo", rank=rank, world_size=self.world_size)
        dist.barrier()
        try:
            self.current_test(**self.test_kwargs)
        except Skipped as skip:
            skipped.put(skip.msg)
        dist.barrier()
        dist.destroy_process_group()
