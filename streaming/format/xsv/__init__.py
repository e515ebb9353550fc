"""The CSV/TSV/XSV shard formats: writers, readers and their column types."""

from streaming.format.xsv.reader import CSVReader, TSVReader, XSVReader
from streaming.format.xsv.writer import CSVWriter, TSVWriter, XSVWriter

__all__ = ["CSVReader", "CSVWriter", "TSVReader", "TSVWriter", "XSVReader", "XSVWriter"]
