"""Constants the reference exposes from ``streaming.base.constant``."""

# Names the reference gives its shared-memory blocks (kept for code that imports them; this
# package keeps its cross-process state in the cache directory instead).
LOCALS = "locals"
BARRIER = "barrier"
NEXT_EPOCH = "next_epoch"
CACHE_USAGE = "cache_usage"
SHARD_STATES = "shard_states"
SHARD_ACCESS_TIMES = "shard_access_times"
RESUME = "resume"
EPOCH_SHAPE = "epoch_shape"
EPOCH_DATA = "epoch_data"
SHM_TO_CLEAN = [LOCALS, BARRIER, NEXT_EPOCH, CACHE_USAGE, SHARD_STATES, SHARD_ACCESS_TIMES, RESUME,
                EPOCH_SHAPE, EPOCH_DATA]

BARRIER_FILELOCK = "barrier_filelock"
CACHE_FILELOCK = "cache_filelock"

# Time to wait, in seconds.
TICK = 0.007

# Default download timeout, in seconds.
DEFAULT_TIMEOUT = 60.0

# "Never accessed" access time of a shard (the reference's uint64 sentinel).
NEVER = 2**64 - 1
