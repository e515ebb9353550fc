"""Re-export of :mod:`streaming.util` at the reference's path."""

from streaming.util import *  # noqa: F401,F403
from streaming.util import __all__  # noqa: F401
