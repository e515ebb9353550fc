"""What StreamingC4 and StreamingPile share: samples' ``text`` through a Hugging Face tokenizer."""

from __future__ import annotations

from typing import Any

from streaming.dataset import StreamingDataset
from streaming.dataset_classes import require_package, standard_args


def auto_tokenizer(needed_by: str) -> Any:
    """``transformers.AutoTokenizer``, or an ImportError saying what to install."""
    return require_package("transformers", needed_by).AutoTokenizer


class TokenizingDataset(StreamingDataset):
    """A StreamingDataset whose samples are their ``text`` column, tokenized.

    Subclasses define ``_check_group_method`` (each with the reference's message) and
    ``_tokenize``. ``transformers`` is imported first, so that its absence is reported before
    any storage is touched; the tokenizer is loaded after ``StreamingDataset.__init__``, as in
    the reference.
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
                 shuffle_block_size: int = 1 << 18,
                 tokenizer_name: str,
                 max_seq_len: int,
                 group_method: str) -> None:
        self._check_group_method(group_method)
        auto = auto_tokenizer(type(self).__name__)
        super().__init__(**standard_args(locals()))
        self.tokenizer_name = tokenizer_name
        self.max_seq_len = max_seq_len
        self.group_method = group_method
        self.tokenizer = auto.from_pretrained(tokenizer_name)
        if self.tokenizer.pad_token is None:
            # Padding to max_length needs a pad token, which some tokenizers (GPT-2's) lack.
            self.tokenizer.pad_token = self.tokenizer.eos_token

    @staticmethod
    def _check_group_method(group_method: str) -> None:
        raise NotImplementedError

    def _tokenize(self, text_sample: dict[str, Any]) -> Any:
        raise NotImplementedError

    def get_item(self, idx: int) -> Any:
        """Get sample by global index, blocking to load its shard if missing, tokenized.

        Args:
            idx (int): Sample index.

        Returns:
            Any: What the tokenizer returns for the sample's ``text``.
        """
        return self._tokenize(super().get_item(idx))
