"""``dataframe_to_mds``: write an Apache Spark DataFrame as an MDS dataset, one part per task.

Each Spark task writes its partition with an :class:`~streaming.MDSWriter` into a sub-directory
named by its task attempt id; the driver then merges the parts' indexes into one ``index.json``
(:func:`~streaming.format.merge.merge_index`). For the same partitioning the shards and index are
byte-identical to the reference's.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterable
from typing import Any, Callable

from streaming.util import get_import_exception_message

try:
    import pandas as pd
    from pyspark import TaskContext
    from pyspark.sql.dataframe import DataFrame
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        BooleanType,
        ByteType,
        DateType,
        DayTimeIntervalType,
        DecimalType,
        DoubleType,
        FloatType,
        IntegerType,
        LongType,
        MapType,
        NullType,
        ShortType,
        StringType,
        StructField,
        StructType,
        TimestampNTZType,
        TimestampType,
    )
except ImportError as e:
    e.msg = get_import_exception_message(e.name or "pyspark", extra_deps="spark")
    raise e

from streaming.format.index import get_index_basename
from streaming.format.mds.encodings import get_mds_encodings
from streaming.format.merge import merge_index as do_merge_index

__all__ = ["SPARK_TO_MDS", "dataframe_to_mds", "infer_dataframe_schema", "is_json_compatible"]

logger = logging.getLogger(__name__)

# Spark type -> MDS encoding (None: no MDS encoding). As the reference maps them.
SPARK_TO_MDS = {
    ByteType(): "uint8",
    ShortType(): "uint16",
    IntegerType(): "int32",
    LongType(): "int64",
    FloatType(): "float32",
    DoubleType(): "float64",
    DecimalType(): "str_decimal",
    StringType(): "str",
    BinaryType(): "bytes",
    BooleanType(): None,
    TimestampType(): None,
    TimestampNTZType(): None,
    DateType(): None,
    DayTimeIntervalType(): None,
    ArrayType(IntegerType()): "ndarray:int32",
    ArrayType(ShortType()): "ndarray:int16",
    ArrayType(LongType()): "ndarray:int64",
    ArrayType(FloatType()): "ndarray:float32",
    ArrayType(DoubleType()): "ndarray:float64",
}


def is_json_compatible(data_type: Any) -> bool:
    """Recursively check if a given PySpark DataType is JSON compatible.

    JSON = Union[Dict[str, 'JSON'], List['JSON'], str, float, int, bool, None]

    Args:
        data_type (Any): A pyspark schema for a column of the input spark dataframe.

    Returns:
        bool: True if data_type is JSON compatible.
    """
    if isinstance(data_type, StructType):
        return all(is_json_compatible(field.dataType) for field in data_type.fields)
    if isinstance(data_type, ArrayType):
        return is_json_compatible(data_type.elementType)
    if isinstance(data_type, MapType):
        return is_json_compatible(data_type.keyType) and is_json_compatible(data_type.valueType)
    return isinstance(data_type, (StringType, IntegerType, FloatType, BooleanType, NullType))


def _map_spark_dtype(spark_data_type: Any) -> str:
    """The MDS encoding of a Spark type.

    Raises:
        ValueError: The type has no MDS encoding.
    """
    if isinstance(spark_data_type, DecimalType):
        mds_type = SPARK_TO_MDS.get(DecimalType())
    elif isinstance(spark_data_type, ArrayType):
        # Whether elements may be null does not change the encoding (the reference only knows
        # arrays that allow nulls, so it rejects e.g. ArrayType(IntegerType(), False)).
        mds_type = SPARK_TO_MDS.get(ArrayType(spark_data_type.elementType))
    else:
        mds_type = SPARK_TO_MDS.get(spark_data_type)
    if mds_type is None:
        raise ValueError(f"{spark_data_type} is not supported by dataframe_to_mds")
    return mds_type


def infer_dataframe_schema(
    dataframe: DataFrame, user_defined_cols: dict[str, Any] | None = None
) -> dict | None:
    """Retrieve schema to construct a dictionary or do sanity check for dataframe_to_mds.

    Args:
        dataframe (spark dataframe): dataframe to inspect schema
        user_defined_cols (Optional[Dict[str, Any]]): user specified schema for dataframe_to_mds

    Returns:
        If user_defined_cols is None, return schema_dict (dict): column name and dtypes that are
        supported by MDSWriter, else None

    Raises:
        ValueError: if any of the datatypes are unsupported by dataframe_to_mds.
    """
    if user_defined_cols is not None:
        supported = {v for v in SPARK_TO_MDS.values() if v}
        for col_name, user_dtype in user_defined_cols.items():
            if col_name not in dataframe.columns:
                raise ValueError(
                    f"{col_name} is not a column of input dataframe: {dataframe.columns}"
                )
            if user_dtype.startswith("ndarray:"):
                parts = user_dtype.split(":")
                if len(parts) == 3:
                    user_dtype = ":".join(parts[:-1])
            actual = dataframe.schema[col_name].dataType
            if user_dtype not in supported:
                if user_dtype == "json":
                    if is_json_compatible(actual):
                        continue
                    raise ValueError(f"{col_name} can not be encoded by MDS JSON.")
                if user_dtype in ("pil", "png", "jpeg", "pkl"):
                    if isinstance(actual, BinaryType):
                        continue
                    raise ValueError(f"Non-binary col {col_name} cannot encode as {user_dtype}.")
                raise ValueError(f"{user_dtype} is not supported by dataframe_to_mds")
            mapped = _map_spark_dtype(actual)
            if user_dtype != mapped:
                raise ValueError(
                    f"Mismatched types: column name `{col_name}` is `{mapped}` in DataFrame but "
                    f"`{user_dtype}` in user_defined_cols"
                )
        return None

    encodings = get_mds_encodings()
    schema_dict = {}
    for field in dataframe.schema:
        dtype = _map_spark_dtype(field.dataType)
        if dtype.split(":")[0] not in encodings:
            raise ValueError(f"{dtype} is not supported by dataframe_to_mds")
        schema_dict[field.name] = dtype
    return schema_dict


def _write_partition(
    iterator: Iterable,
    mds_path: tuple[str, str],
    mds_kwargs: dict[str, Any],
    merge_index: bool,
    udf_iterable: Callable | None,
    udf_kwargs: dict[str, Any],
) -> Iterable:
    """Spark task body: write this partition's rows into ``<out>/<task attempt id>``."""
    from streaming.format.mds.writer import MDSWriter

    context = TaskContext.get()
    if context is None:
        raise RuntimeError("TaskContext.get() returns None")
    task = str(context.taskAttemptId())
    if mds_path[1] == "":
        output: Any = os.path.join(mds_path[0], task)
        partition_path = (output, "")
    else:
        output = (os.path.join(mds_path[0], task), os.path.join(mds_path[1], task))
        partition_path = output
    kwargs = dict(mds_kwargs)
    kwargs["out"] = output
    if merge_index:
        kwargs["keep_local"] = True  # the driver merges from the workers' local copies

    with MDSWriter(**kwargs) as writer:
        for pdf in iterator:
            records = udf_iterable(pdf, **udf_kwargs) if udf_iterable else pdf.to_dict("records")
            if not isinstance(records, Iterable):
                raise TypeError(
                    f"pandas_processing_fn needs to return an iterable instead of a "
                    f"{type(records)}"
                )
            for sample in records:
                writer.write(sample)

    index = get_index_basename()
    yield pd.DataFrame(
        {
            "mds_path_local": [os.path.join(partition_path[0], index)],
            "mds_path_remote": [
                os.path.join(partition_path[1], index) if partition_path[1] != "" else ""
            ],
        }
    )


def dataframe_to_mds(
    dataframe: DataFrame,
    merge_index: bool = True,
    mds_kwargs: dict[str, Any] | None = None,
    udf_iterable: Callable | None = None,
    udf_kwargs: dict[str, Any] | None = None,
) -> tuple[str, str]:
    """Execute a spark dataframe to MDS conversion process.

    This method orchestrates the conversion of a spark dataframe into MDS format by processing the
    input data, applying a user-defined iterable function if provided, and writing the results to
    an MDS-compatible format. The converted data is saved to mds_path.

    Args:
        dataframe (pyspark.sql.DataFrame): A DataFrame containing Delta Lake data.
        merge_index (bool): Whether to merge MDS index files. Defaults to ``True``.
        mds_kwargs (dict): Arguments of :class:`~streaming.MDSWriter`; ``out`` is required,
            ``columns`` is inferred from the DataFrame's schema when missing and ``compression``
            defaults to ``zstd``.
        udf_iterable (Callable or None): A user-defined function that returns an iterable over the
            dataframe. udf_kwargs is the k-v args for the method. Defaults to ``None``.
        udf_kwargs (Dict): Additional keyword arguments to pass to the pandas processing
            function if provided. Defaults to an empty dictionary.

    Returns:
        mds_path (str or (str,str)): actual local and remote path were used

    Raises:
        ValueError: Empty DataFrame, missing ``out`` (or ``columns`` with ``udf_iterable``), or
            a column type MDS cannot hold.

    Notes:
        - If udf_iterable is set, schema check will be skipped because the user defined iterable
          can create new columns. User must make sure they provide correct mds_kwargs[columns]
    """
    from streaming.storage.upload import CloudUploader

    if dataframe is None or dataframe.isEmpty():
        raise ValueError("Input dataframe is None or Empty!")
    mds_kwargs = dict(mds_kwargs) if mds_kwargs else {}
    udf_kwargs = dict(udf_kwargs) if udf_kwargs else {}
    if "out" not in mds_kwargs:
        raise ValueError("`out` and `columns` need to be specified in `mds_kwargs`")
    if "compression" not in mds_kwargs:
        logger.info("Defaulting to zstd compression")
        mds_kwargs["compression"] = "zstd"

    if udf_iterable is not None:
        if "columns" not in mds_kwargs:
            raise ValueError(
                "If udf_iterable is specified, user must provide correct `columns` in the "
                "mds_kwargs"
            )
        logger.warning(
            "With udf_iterable defined, it's up to the user's discretion to provide "
            "mds_kwargs[columns]'"
        )
    elif "columns" not in mds_kwargs:
        logger.warning(
            "User's discretion required: columns arg is missing from mds_kwargs. Will be "
            "auto-inferred"
        )
        mds_kwargs["columns"] = infer_dataframe_schema(dataframe)
        logger.warning(f"Auto inferred schema: {mds_kwargs['columns']}")
    else:
        infer_dataframe_schema(dataframe, mds_kwargs["columns"])

    out = mds_kwargs["out"]
    keep_local = bool(mds_kwargs.get("keep_local", False))
    cu = CloudUploader.get(out, keep_local=keep_local)
    if cu.remote is None:
        logger.warning(
            f"Path {cu.local} is interpreted as a local path. If this is actually mounted "
            f"distributed storage, it will work, but consider also specifying a local temp path. "
            f'Pass a (local, remote) tuple as "out", as in ("/local_disk0/my_tmp", "{cu.local}")'
        )
        mds_path = (cu.local, "")
    else:
        mds_path = (cu.local, cu.remote)

    result_schema = StructType(
        [
            StructField("mds_path_local", StringType(), False),
            StructField("mds_path_remote", StringType(), False),
        ]
    )
    worker_kwargs = {k: v for k, v in mds_kwargs.items() if k != "out"}

    def write_mds(iterator: Iterable) -> Iterable:
        return _write_partition(
            iterator, mds_path, worker_kwargs, merge_index, udf_iterable, udf_kwargs
        )

    partitions = dataframe.mapInPandas(func=write_mds, schema=result_schema).collect()

    # Without a remote the local copy is the dataset: always keep it.
    keep_local_files = not (cu.remote is not None and mds_kwargs.get("keep_local", True) in (False,))
    if merge_index:
        index_files = [(row["mds_path_local"], row["mds_path_remote"]) for row in partitions]
        do_merge_index(index_files, out, keep_local=keep_local_files, download_timeout=60)
    if not keep_local_files:
        shutil.rmtree(cu.local, ignore_errors=True)
    return mds_path
