"""C4 (Colossal Cleaned Common Crawl), tokenized as it streams."""

from __future__ import annotations

from typing import Any

from streaming.text._tokenizing import TokenizingDataset

__all__ = ["StreamingC4"]


class StreamingC4(TokenizingDataset):
    """C4 (Colossal Cleaned Common Crawl), each sample's ``text`` tokenized as it streams.

    Takes the reference's older keyword set of :class:`~streaming.StreamingDataset` (see it for
    those arguments), with these defaults: ``partition_algo='orig'``, ``shuffle_algo='py1s'``,
    ``shuffle_block_size=1 << 18``. Needs Hugging Face ``transformers``.

    Args:
        tokenizer_name (str): The name (or local directory) of the Hugging Face tokenizer.
        max_seq_len (int): The length every token sample is truncated or padded to.
        group_method (str): How text samples become token samples; only ``'truncate'``.

    Raises:
        ValueError: ``group_method`` is not ``'truncate'``.
        ImportError: ``transformers`` is not installed.
    """

    @staticmethod
    def _check_group_method(group_method: str) -> None:
        if group_method not in {"truncate"}:
            raise ValueError(f"group_method='{group_method}' must be one of truncate.")

    def _tokenize(self, text_sample: dict[str, Any]) -> Any:
        if self.group_method != "truncate":
            raise ValueError(f"Got unknown group_method={self.group_method}.")
        return self.tokenizer(text_sample["text"], truncation=True, padding="max_length",
                              max_length=self.max_seq_len)
