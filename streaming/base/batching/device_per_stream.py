"""Re-export of ``generate_work_device_per_stream_batching`` at the reference's module path."""

from streaming.plan.batching import generate_work_device_per_stream_batching

__all__ = ["generate_work_device_per_stream_batching"]
