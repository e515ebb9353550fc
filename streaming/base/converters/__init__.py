"""The reference's ``streaming.base.converters``. Re-exports only (needs the ``spark`` extra)."""

from streaming.converters.spark import (
    SPARK_TO_MDS,
    dataframe_to_mds,
    infer_dataframe_schema,
    is_json_compatible,
)

__all__ = ["dataframe_to_mds", "SPARK_TO_MDS", "infer_dataframe_schema", "is_json_compatible"]
