"""The reference's ``streaming.base.storage`` package (re-exports only)."""

from streaming.base.storage.download import (
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
)
from streaming.base.storage.upload import (
    AzureDataLakeUploader,
    AzureUploader,
    CloudUploader,
    GCSUploader,
    HFUploader,
    LocalUploader,
    OCIUploader,
    S3Uploader,
)

__all__ = [
    "CloudUploader",
    "S3Uploader",
    "GCSUploader",
    "OCIUploader",
    "LocalUploader",
    "AzureUploader",
    "AzureDataLakeUploader",
    "HFUploader",
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
