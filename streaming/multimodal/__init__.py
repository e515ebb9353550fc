"""The reference's ready-made multimodal datasets: WebVid, videos inside or outside the shards."""

from __future__ import annotations

from streaming.multimodal.webvid import (
    StreamingInsideWebVid,
    StreamingOutsideDTWebVid,
    StreamingOutsideGIWebVid,
)

__all__ = ["StreamingInsideWebVid", "StreamingOutsideDTWebVid", "StreamingOutsideGIWebVid"]
