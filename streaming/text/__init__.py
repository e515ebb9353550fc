"""The reference's ready-made text datasets: C4, English Wikipedia, the Pile.

``StreamingC4`` and ``StreamingPile`` tokenize with Hugging Face ``transformers``, which this
project does not depend on: install it to use them.
"""

from __future__ import annotations

from streaming.text.c4 import StreamingC4
from streaming.text.enwiki import StreamingEnWiki
from streaming.text.pile import StreamingPile

__all__ = ["StreamingPile", "StreamingC4", "StreamingEnWiki"]
