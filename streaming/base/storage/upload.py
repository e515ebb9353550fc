"""The reference's ``streaming.base.storage.upload`` module path (re-exports only)."""

from streaming.storage.download import BOTOCORE_CLIENT_ERROR_CODES, GCS_ERROR_NO_AUTHENTICATION
from streaming.storage.upload import (
    UPLOADERS,
    AlipanUploader,
    AzureDataLakeUploader,
    AzureUploader,
    CloudUploader,
    DatabricksUnityCatalogUploader,
    DatabricksUploader,
    DBFSUploader,
    GCSAuthentication,
    GCSUploader,
    HFUploader,
    LocalUploader,
    OCIUploader,
    S3Uploader,
    SFTPUploader,
)

__all__ = [
    "CloudUploader",
    "S3Uploader",
    "GCSUploader",
    "OCIUploader",
    "HFUploader",
    "AzureUploader",
    "DatabricksUnityCatalogUploader",
    "DBFSUploader",
    "AlipanUploader",
    "LocalUploader",
]

_REEXPORTED = (
    GCSAuthentication,
    UPLOADERS,
    AzureDataLakeUploader,
    DatabricksUploader,
    SFTPUploader,
    BOTOCORE_CLIENT_ERROR_CODES,
    GCS_ERROR_NO_AUTHENTICATION,
)
