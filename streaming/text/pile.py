"""The Pile, tokenized as it streams."""

from __future__ import annotations

from typing import Any

from streaming.text._tokenizing import TokenizingDataset

__all__ = ["StreamingPile"]


class StreamingPile(TokenizingDataset):
    """The Pile, each sample's ``text`` tokenized as it streams.

    Takes the same arguments as :class:`~streaming.text.StreamingC4` (and needs
    ``transformers`` likewise); an unsupported ``group_method`` is a ``ValueError`` with the
    reference's own message for the Pile.
    """

    @staticmethod
    def _check_group_method(group_method: str) -> None:
        if group_method not in ["truncate"]:
            raise ValueError('Only group_method="truncate" is supported at this time.')

    def _tokenize(self, text_sample: dict[str, Any]) -> Any:
        if self.group_method == "truncate":
            return self.tokenizer(text_sample["text"], truncation=True, padding="max_length",
                                  max_length=self.max_seq_len)
        # Only reachable if group_method is changed after construction, as in the reference.
        return self.tokenizer(text_sample["text"], truncation=False, padding=False,
                              max_length=None)
