"""Converters to MDS: Spark DataFrames (:func:`dataframe_to_mds`) and JSONL/Parquet/CSV files.

``dataframe_to_mds`` and its helpers need the ``spark`` extra (pyspark, pandas); they are
imported on first use so that the file converters work without it.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["SPARK_TO_MDS", "dataframe_to_mds", "infer_dataframe_schema", "is_json_compatible"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        module = importlib.import_module("streaming.converters.spark")
        return getattr(module, name)
    raise AttributeError(f"module 'streaming.converters' has no attribute {name!r}")
