"""Re-export of :mod:`streaming.registry` at the reference's path."""

from streaming.registry import *  # noqa: F403
from streaming.registry import __all__  # noqa: F401
