"""English Wikipedia, pre-tokenized for BERT-style masked language modelling."""

from __future__ import annotations

from typing import Any

import numpy as np

from streaming.dataset import StreamingDataset
from streaming.dataset_classes import standard_args

__all__ = ["StreamingEnWiki"]


class StreamingEnWiki(StreamingDataset):
    """English Wikipedia as masked-language-model samples (the MLPerf BERT preprocessing).

    Each sample's columns are raw bytes of the arrays in :attr:`field_dtypes`; a sample is
    returned as ``input_ids``, ``token_type_ids`` (from ``segment_ids``), ``attention_mask``
    (from ``input_mask``) and ``labels`` (``-100`` except at ``masked_lm_positions``, which hold
    ``masked_lm_ids``).

    Takes the reference's older keyword set of :class:`~streaming.StreamingDataset` (see it for
    those arguments), with these defaults: ``partition_algo='orig'``, ``shuffle_algo='py1s'``,
    ``shuffle_block_size=1 << 18``.
    """

    def __init__(self,
                 *,
                 remote: str | None = None,
                 local: str | None = None,
                 split: str | None = None,
                 download_retry: int = 2,
                 download_timeout: float = 60,
                 validate_hash: str | None = None,
                 keep_zip: bool = False,
                 epoch_size: int | None = None,
                 predownload: int | None = None,
                 cache_limit: int | None = None,
                 partition_algo: str = "orig",
                 num_canonical_nodes: int | None = None,
                 batch_size: int | None = None,
                 shuffle: bool = False,
                 shuffle_algo: str = "py1s",
                 shuffle_seed: int = 9176,
                 shuffle_block_size: int = 1 << 18) -> None:
        super().__init__(**standard_args(locals()))
        self.field_dtypes = {
            "input_ids": np.int32,
            "input_mask": np.int32,
            "attention_mask": np.int32,
            "segment_ids": np.int32,
            "token_type_ids": np.int32,
            "masked_lm_positions": np.int32,
            "masked_lm_ids": np.int32,
            "masked_lm_weights": np.float32,
            "next_sentence_labels": np.int32,
            "labels": np.int32,
        }

    def get_item(self, idx: int) -> Any:
        """Get sample by global index, blocking to load its shard if missing.

        Args:
            idx (int): Sample index.

        Returns:
            Dict[str, NDArray]: ``input_ids``, ``token_type_ids``, ``attention_mask``,
            ``labels``.
        """
        raw = super().get_item(idx)
        arrays = {key: np.frombuffer(value, self.field_dtypes[key]) for key, value in raw.items()}
        labels = np.full((len(arrays["input_ids"]),), -100)
        labels[arrays["masked_lm_positions"]] = arrays["masked_lm_ids"]
        # Copies: frombuffer's arrays are read-only views of the sample's bytes.
        return {
            "input_ids": arrays["input_ids"].copy(),
            "token_type_ids": arrays["segment_ids"].copy(),
            "attention_mask": arrays["input_mask"].copy(),
            "labels": labels,
        }
