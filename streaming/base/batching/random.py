"""Re-export of ``generate_work_random_batching`` at the reference's module path."""

from streaming.plan.batching import generate_work_random_batching

__all__ = ["generate_work_random_batching"]
