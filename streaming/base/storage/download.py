"""The reference's ``streaming.base.storage.download`` module path (re-exports only)."""

from streaming.constant import DEFAULT_TIMEOUT  # noqa: F401
from streaming.storage.download import (
    BOTOCORE_CLIENT_ERROR_CODES,
    DOWNLOADER_MAPPINGS,
    GCS_ERROR_NO_AUTHENTICATION,
    AlipanDownloader,
    AzureDataLakeDownloader,
    AzureDownloader,
    CloudDownloader,
    DatabricksUnityCatalogDownloader,
    DBFSDownloader,
    GCSDownloader,
    HFDownloader,
    LocalDownloader,
    OCIDownloader,
    S3Downloader,
    SFTPDownloader,
    download_file,
)

__all__ = [
    "CloudDownloader",
    "S3Downloader",
    "SFTPDownloader",
    "GCSDownloader",
    "OCIDownloader",
    "AzureDownloader",
    "AzureDataLakeDownloader",
    "HFDownloader",
    "DatabricksUnityCatalogDownloader",
    "DBFSDownloader",
    "AlipanDownloader",
    "LocalDownloader",
]

_REEXPORTED = (
    BOTOCORE_CLIENT_ERROR_CODES,
    DOWNLOADER_MAPPINGS,
    GCS_ERROR_NO_AUTHENTICATION,
    download_file,
)
