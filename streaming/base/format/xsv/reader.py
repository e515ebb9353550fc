"""The reference's ``streaming.base.format.xsv.reader``. Re-exports only."""

from streaming.format.xsv.reader import CSVReader, TSVReader, XSVReader

__all__ = ["XSVReader", "CSVReader", "TSVReader"]
