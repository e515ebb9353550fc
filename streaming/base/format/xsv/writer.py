"""The reference's ``streaming.base.format.xsv.writer``. Re-exports only."""

from streaming.format.xsv.writer import CSVWriter, TSVWriter, XSVWriter

__all__ = ["XSVWriter", "CSVWriter", "TSVWriter"]
