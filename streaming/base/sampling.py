"""Re-export of ``get_sampling`` at the reference's module path."""

from streaming.plan.sampling import get_sampling

__all__ = ["get_sampling"]
