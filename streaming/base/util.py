"""Re-export of :mod:`streaming.util` at the reference's path."""

from streaming.constant import SHM_TO_CLEAN  # noqa: F401
from streaming.format.merge import (  # noqa: F401
    _merge_index_from_list,
    _merge_index_from_root,
    merge_index,
)
from streaming.util import *  # noqa: F401,F403
from streaming.util import __all__  # noqa: F401
