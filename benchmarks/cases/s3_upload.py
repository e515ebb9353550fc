"""Upload a prepared dataset directory to the loopback S3 server (runs in the reference venv).

Params: ``src``, ``bucket``, ``prefix``, ``endpoint``.
"""

from __future__ import annotations

import os
from typing import Any

from _common import main


def run(impl: str, params: dict[str, Any]) -> dict[str, Any]:
    import boto3

    s3 = boto3.client(
        "s3",
        endpoint_url=params["endpoint"],
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    bucket = params["bucket"]
    existing = [b["Name"] for b in s3.list_buckets().get("Buckets", [])]
    if bucket not in existing:
        s3.create_bucket(Bucket=bucket)
    total = 0
    for root, _, files in os.walk(params["src"]):
        for name in files:
            if name.startswith("."):
                continue
            path = os.path.join(root, name)
            key = params["prefix"] + "/" + os.path.relpath(path, params["src"])
            s3.upload_file(path, bucket, key)
            total += os.path.getsize(path)
    return {"bytes": total}


if __name__ == "__main__":
    main(run)
