"""Per-run state shared by a rank and its DataLoader workers: the epoch counter and resume state.

The reference keeps these in POSIX shared memory with a barrier across the node's workers. Here
they live in one small JSON file per StreamingDataset instance (named by a token drawn when the
rank's dataset is built, so its forked or spawned workers share it), updated under a file lock.

Epochs are joined, not barriered: the first worker of a DataLoader iteration to arrive starts the
next epoch (resolving any checkpoint to resume from) and later workers of the same iteration join
it. Workers of one iteration are recognised by torch's per-iteration base seed, so a new
iteration always starts a new epoch even if a worker of the previous one never ran.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import uuid
from typing import Any, Iterator

from streaming.locks import FileLock
from streaming.storage.atomic import naming

__all__ = ["RunState"]

# Run files older than this are leftovers of dead runs.
STALE_SECONDS = 7 * 24 * 3600


class RunState:
    """The epoch counter and checkpoint of one rank's dataset, visible to its workers.

    Args:
        root (str): The cache's runtime directory.
    """

    def __init__(self, root: str) -> None:
        self.dirname = os.path.join(root, "runs")
        os.makedirs(self.dirname, exist_ok=True)
        self.token = uuid.uuid4().hex
        self.owner_pid = os.getpid()
        self.path = os.path.join(self.dirname, self.token + ".json")
        self._prune()
        self._write({"next_epoch": 0, "resume": None, "key": None, "joined": [],
                     "current": None})

    def _prune(self) -> None:
        cutoff = time.time() - STALE_SECONDS
        with contextlib.suppress(OSError):
            for name in os.listdir(self.dirname):
                path = os.path.join(self.dirname, name)
                with contextlib.suppress(OSError):
                    if os.stat(path).st_mtime < cutoff:
                        os.remove(path)

    def _read(self) -> dict[str, Any]:
        try:
            with open(self.path) as f:
                return json.load(f)
        except FileNotFoundError:  # e.g. the owner already exited and cleaned up
            return {"next_epoch": 0, "resume": None, "key": None, "joined": [], "current": None}

    def _write(self, state: dict[str, Any]) -> None:
        # Atomic (a reader never sees half a file) but not fsynced: this is scratch state of a
        # live run, worthless after a crash, and two fsyncs cost milliseconds of every epoch
        # start. The temp name is unique per thread; writers hold the state's lock.
        tmp = f"{self.path}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            with open(tmp, "w") as f:
                f.write(json.dumps(state))
            os.replace(tmp, self.path)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            named = naming(exc, self.path)
            if named is not None:
                raise named from exc
            raise

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        with FileLock(self.path + ".lock", thread_local=False):
            state = self._read()
            before = json.dumps(state, sort_keys=True)
            yield state
            if json.dumps(state, sort_keys=True) != before:
                self._write(state)

    @property
    def next_epoch(self) -> int:
        """The epoch the next iteration will start (absent a checkpoint)."""
        return int(self._read()["next_epoch"])

    @next_epoch.setter
    def next_epoch(self, value: int) -> None:
        with self._locked() as state:
            state["next_epoch"] = int(value)

    @property
    def resume(self) -> dict[str, Any] | None:
        """The checkpoint loaded by ``load_state_dict``, if any."""
        return self._read()["resume"]

    @resume.setter
    def resume(self, obj: dict[str, Any] | None) -> None:
        with self._locked() as state:
            state["resume"] = obj

    def start_epoch(self, key: Any, worker: int) -> tuple[int, dict[str, Any] | None]:
        """Start the next epoch, or join the one this DataLoader iteration already started.

        Args:
            key (Any): Identifies the DataLoader iteration (``None`` outside DataLoader workers:
                every call starts a new epoch).
            worker (int): This worker's index within its rank.

        Returns:
            Tuple[int, Optional[Dict[str, Any]]]: The presumed epoch, and the checkpoint to resume
                from if it is not stale (its ``epoch`` >= the presumed epoch).
        """
        with self._locked() as state:
            if key is not None and state["key"] == key and worker not in state["joined"]:
                state["joined"].append(worker)
                presumed = state["current"]
            else:
                presumed = state["next_epoch"]
                resume = state["resume"]
                if resume is not None and resume["epoch"] >= presumed:
                    state["next_epoch"] = resume["epoch"] + 1
                else:
                    state["next_epoch"] = presumed + 1
                state["key"] = key
                state["joined"] = [worker]
                state["current"] = presumed
            resume = state["resume"]
        if resume is not None and resume["epoch"] < presumed:
            resume = None
        return presumed, resume

    def close(self) -> None:
        """Remove the run file (only by the process that created it)."""
        if os.getpid() == self.owner_pid:
            for path in (self.path, self.path + ".lock"):
                with contextlib.suppress(OSError):
                    os.remove(path)
