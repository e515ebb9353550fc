"""The reference's ``streaming.base.format.xsv``. Re-exports only."""

from streaming.format.xsv.reader import CSVReader, TSVReader, XSVReader
from streaming.format.xsv.writer import CSVWriter, TSVWriter, XSVWriter

__all__ = ["CSVReader", "CSVWriter", "TSVReader", "TSVWriter", "XSVReader", "XSVWriter"]
