"""dataframe_to_mds on a real local Spark session, against the reference's output."""

from __future__ import annotations

import base64
import json
import os
import pathlib
import shutil
import sys

import numpy as np
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pandas")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs a Java runtime", allow_module_level=True)

from streaming import LocalDataset  # noqa: E402
from streaming.base.converters import (  # noqa: E402
    SPARK_TO_MDS,
    dataframe_to_mds,
    infer_dataframe_schema,
    is_json_compatible,
)
from streaming.format.compression import decompress  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    """A local[2] Spark session bound to loopback, its Python workers on this interpreter."""
    saved = {k: os.environ.get(k) for k in ("SPARK_LOCAL_IP", "PYSPARK_PYTHON",
                                            "PYSPARK_DRIVER_PYTHON")}
    os.environ.update(
        SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("shardstream-tests")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def case(oracles: pathlib.Path) -> dict:
    return json.loads((oracles / "json_xsv" / "spark.json").read_text())


def _dataframe(spark, case: dict):
    from pyspark.sql.types import (
        ArrayType,
        DoubleType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    schema = StructType(
        [
            StructField("id", LongType(), False),
            StructField("name", StringType(), False),
            StructField("score", DoubleType(), False),
            StructField("tokens", ArrayType(IntegerType(), False), False),
        ]
    )
    rows = [(r["id"], r["name"], r["score"], r["tokens"]) for r in case["rows"]]
    # parallelize slices a list into equal contiguous partitions, as the oracle split it.
    rdd = spark.sparkContext.parallelize(rows, numSlices=case["partitions"])
    return spark.createDataFrame(rdd, schema)


def _files(root: pathlib.Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_matches_reference_and_reads_back(spark, case, tmp_path) -> None:
    df = _dataframe(spark, case)
    assert infer_dataframe_schema(df) == case["columns"]
    out = tmp_path / "out"
    result = dataframe_to_mds(df, merge_index=True, mds_kwargs={"out": str(out), **case["mds_kwargs"]})
    assert result == (str(out), "")

    ours = _files(out)
    merged = json.loads(ours["index.json"])
    # Sub-directories are named by Spark task attempt ids, which depend on the session's history:
    # map ours to the reference's partition numbers by order of appearance in the merged index.
    order: list[str] = []
    for shard in merged["shards"]:
        part = shard["raw_data"]["basename"].split("/")[0]
        if part not in order:
            order.append(part)
    assert len(order) == case["partitions"]
    rename = {part: str(k) for k, part in enumerate(order)}

    def renamed(name: str) -> str:
        head, _, rest = name.partition("/")
        return f"{rename[head]}/{rest}" if rest else name

    theirs = {k: base64.b64decode(v) for k, v in case["files"].items()}
    text = ours.pop("index.json").decode()
    for part, k in rename.items():
        text = text.replace(f'"{part}/shard.', f'"{k}/shard.')
    assert text == theirs.pop("index.json").decode()
    assert {renamed(k): v for k, v in ours.items()} == theirs

    # LocalDataset reads raw shards: decompress the zstd ones (as the reference needs too).
    for shard in merged["shards"]:
        raw, zipped = shard["raw_data"], shard["zip_data"]
        data = decompress(shard["compression"], (out / zipped["basename"]).read_bytes())
        (out / raw["basename"]).write_bytes(data)
    dataset = LocalDataset(str(out))
    assert len(dataset) == len(case["rows"])
    for i in (0, 1, len(case["rows"]) // 2, len(case["rows"]) - 1):
        sample, row = dataset[i], case["rows"][i]
        assert sample["id"] == row["id"] and sample["name"] == row["name"]
        assert sample["score"] == row["score"]
        np.testing.assert_array_equal(sample["tokens"], np.asarray(row["tokens"], np.int32))


def test_udf_iterable_and_argument_errors(spark, case, tmp_path) -> None:
    df = _dataframe(spark, case)

    def doubled(pdf, factor):
        for row in pdf.to_dict("records"):
            yield {"id": int(row["id"]) * factor, "text": str(row["name"])}

    out = tmp_path / "udf"
    dataframe_to_mds(
        df,
        mds_kwargs={"out": str(out), "columns": {"id": "int64", "text": "str"},
                    "compression": None},
        udf_iterable=doubled,
        udf_kwargs={"factor": 2},
    )
    dataset = LocalDataset(str(out))
    assert sorted(dataset[i]["id"] for i in range(len(dataset))) == sorted(
        2 * r["id"] for r in case["rows"]
    )
    index = json.loads((out / "index.json").read_text())
    assert {s["compression"] for s in index["shards"]} == {None}

    # Argument errors (each costs an isEmpty() Spark job, so only a few here).
    with pytest.raises(ValueError, match="`out`"):
        dataframe_to_mds(df, mds_kwargs={"columns": {"id": "int64"}})
    with pytest.raises(ValueError, match="Mismatched types"):
        dataframe_to_mds(df, mds_kwargs={"out": str(tmp_path / "y"), "columns": {"id": "str"}})
    assert not (tmp_path / "y").exists()
    # The schema checks themselves need no job.
    with pytest.raises(ValueError, match="not a column"):
        infer_dataframe_schema(df, {"nope": "str"})
    with pytest.raises(ValueError, match="can not be encoded by MDS JSON"):
        infer_dataframe_schema(df, {"score": "json"})  # doubles are not in its JSON types
    assert infer_dataframe_schema(df, {"tokens": "ndarray:int32:7", "id": "int64"}) is None


def test_schema_mapping_tables() -> None:
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        BooleanType,
        DecimalType,
        FloatType,
        MapType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    assert SPARK_TO_MDS[FloatType()] == "float32"
    assert SPARK_TO_MDS[DecimalType()] == "str_decimal"
    assert SPARK_TO_MDS[BinaryType()] == "bytes"
    assert SPARK_TO_MDS[TimestampType()] is None
    nested = StructType([StructField("a", ArrayType(StringType())),
                         StructField("m", MapType(StringType(), BooleanType()))])
    assert is_json_compatible(nested)
    assert not is_json_compatible(StructType([StructField("b", BinaryType())]))
