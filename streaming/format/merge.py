"""``merge_index``: join the ``index.json`` files of sub-datasets into one index at their root.

A dataset written in parts (one sub-directory per Spark task, per process, ...) becomes one
dataset by writing, at the root, an index whose shard entries are those of the parts with each
basename prefixed by its part's directory name. Shard files are not moved or rewritten.

Compatibility: the merged index is serialized as the reference does (``version`` first, shard
keys in the order the parts' indexes list them), so it is byte-identical. Two reference
behaviours are deliberately not kept: the root form lists only ``index.json`` files (the
reference treats every ``*.json`` file below the root as an index, so it fails on JSON-format
shards), and ``keep_local=False`` never deletes a dataset that has no remote copy.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import posixpath
import shutil
import tempfile
import urllib.parse
from collections import OrderedDict
from typing import Any, Sequence, Union

from streaming.format.index import get_index_basename, validate_index

__all__ = ["merge_index"]

logger = logging.getLogger(__name__)

IndexURL = Union[str, tuple[str, str]]


def merge_index(*args: Any, **kwargs: Any) -> None:
    r"""Merge index.json from partitions to form a global index.json.

    This can be called as

        merge_index(index_file_urls, out, keep_local, download_timeout)

        merge_index(out, keep_local, download_timeout)

    The first signature takes in a list of index files URLs of MDS partitions.
    The second takes the root of a MDS dataset and parse the partition folders from there.

    Args:
        index_file_urls (List[Union[str, Tuple[str,str]]]): index.json from all the partitions.
            Each element can take the form of a single path string or a tuple string.

            1. If ``index_file_urls`` is a List of local URLs, merge locally without download.
            2. If ``index_file_urls`` is a List of tuple (local, remote) URLs, check if local
               index.json are missing, download before merging.
            3. If ``index_file_urls`` is a List of remote URLs, download all and merge.

        out (Union[str, Tuple[str,str]]): folder that contain MDS partitions and to put the
            merged index file

            1. A local directory, merge index happens locally.
            2. A remote directory, download all the sub-directories index.json, merge locally
               and upload.
            3. A tuple (local_dir, remote_dir), check if local index.json exist, download if not.

        keep_local (bool): Keep local copy of the merged index file. Defaults to ``True``.
        download_timeout (int): The allowed time for downloading each json file. Defaults to 60.

    Raises:
        ValueError: The arguments fit neither form, or a part's index is malformed.
        FileNotFoundError: A part's index exists neither locally nor remotely.
        RuntimeError: A part's index could not be downloaded.
    """
    if args and isinstance(args[0], list) and len(args) + len(kwargs) in (2, 3, 4):
        return _merge_index_from_list(*args, **kwargs)
    if args and isinstance(args[0], (str, tuple)) and len(args) + len(kwargs) in (1, 2, 3):
        return _merge_index_from_root(*args, **kwargs)
    if not args and "index_file_urls" in kwargs:
        return _merge_index_from_list(**kwargs)
    if not args and "out" in kwargs:
        return _merge_index_from_root(**kwargs)
    raise ValueError(f"Invalid arguments to merge_index: {args}, {kwargs}")


def _strip(url: IndexURL) -> IndexURL:
    if isinstance(url, str):
        return url.rstrip("/").strip()
    return (url[0].rstrip("/").strip(), url[1].rstrip("/").strip())


def _url_path(url: str) -> str:
    """The path part of a URL (the whole of a local path)."""
    return urllib.parse.urlparse(url).path


def _fetch(src: str, temp_root: str, timeout: float) -> str:
    """Return a local path holding the index at ``src``, downloading it if it is remote."""
    from streaming.storage.filesystem import is_local

    if is_local(src):
        path = src[len("file://") :] if src.startswith("file://") else src
        if not os.path.isfile(path):
            # A RuntimeError, as the reference raises for any index it cannot fetch (it copies
            # local ones too); the missing file is its cause.
            missing = FileNotFoundError(errno.ENOENT, "No such file or directory", path)
            raise RuntimeError(f"Failed to download index.json: {src}: no such file") from missing
        return path
    from streaming.storage.download import download

    dest = os.path.join(temp_root, _url_path(src).lstrip("/"))
    try:
        download(src, dest, timeout=timeout)
    except Exception as ex:
        raise RuntimeError(f"Failed to download index.json: {src} to {dest}") from ex
    return dest


def _merge_index_from_list(
    index_file_urls: Sequence[IndexURL],
    out: Union[str, tuple[str, str]],
    keep_local: bool = True,
    download_timeout: int = 60,
) -> None:
    """Merge the indexes of a list of parts into ``out``'s index (see :func:`merge_index`)."""
    from streaming.storage.atomic import atomic_file
    from streaming.storage.upload import CloudUploader

    if not index_file_urls or not out:
        logger.warning(
            "Either index_file_urls or out are None. Need to specify both `index_file_urls` "
            "and `out`. No index merged"
        )
        return
    index_basename = get_index_basename()
    cu = CloudUploader.get(out, keep_local=True, exist_ok=True)
    urls = [_strip(u) for u in OrderedDict.fromkeys(index_file_urls)]

    shards: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as temp_root:
        for url in urls:
            if isinstance(url, tuple):
                src = url[0] if os.path.exists(url[0]) else url[1]
            else:
                src = url
            if not _url_path(src):
                raise FileNotFoundError(
                    f"Check data availability! index {url} is neither a local file nor a "
                    f"valid URL"
                )
            local = _fetch(src, temp_root, download_timeout)
            with open(local, "rb") as fp:
                text = fp.read()
            try:
                obj = json.loads(text)
            except ValueError as err:
                raise ValueError(f"{src}: not a valid JSON index: {err}") from err
            validate_index(obj, src)
            # The part's directory name, as the reference takes it: the parent of the index.
            part = posixpath.basename(posixpath.dirname(_url_path(src).replace(os.sep, "/")))
            for shard in obj["shards"]:
                for key in ("raw_data", "zip_data", "raw_meta", "zip_meta"):
                    if shard.get(key):
                        shard[key]["basename"] = os.path.join(part, shard[key]["basename"])
            shards += obj["shards"]

    # Not sort_keys: the reference dumps the merged index with ``version`` first.
    data = json.dumps({"version": 2, "shards": shards}).encode("utf-8")
    with atomic_file(os.path.join(cu.local, index_basename)) as (fd, _):
        with os.fdopen(os.dup(fd), "wb") as fp:
            fp.write(data)
    if cu.remote is not None:
        cu.upload_file(index_basename)
        if not keep_local:
            shutil.rmtree(cu.local, ignore_errors=True)


def _is_part_index(path: str, root: str) -> bool:
    """Whether ``path`` is an ``index.json`` below ``root`` (not the root's own)."""
    if posixpath.basename(path) != get_index_basename():
        return False
    prefix = _url_path(root)
    return posixpath.dirname(_url_path(path)).strip("/") != prefix.strip("/")


def _merge_index_from_root(
    out: Union[str, tuple[str, str]], keep_local: bool = True, download_timeout: int = 60
) -> None:
    """Merge the indexes of every part below ``out`` (see :func:`merge_index`)."""
    from streaming.storage.upload import CloudUploader, list_files

    if not out:
        logger.warning("No MDS dataset folder specified, no index merged")
        return
    cu = CloudUploader.get(out, exist_ok=True, keep_local=True)
    local_root = os.path.abspath(cu.local)
    local_files = sorted(
        os.path.join(dirpath, name)
        for dirpath, _, names in os.walk(cu.local)
        for name in names
        if name == get_index_basename() and os.path.abspath(dirpath) != local_root
    )
    if cu.remote:
        remote_files = [f for f in list_files(cu.remote) if _is_part_index(f, cu.remote)]
        if len(local_files) == len(remote_files):
            urls: list[IndexURL] = list(zip(local_files, remote_files))
        else:
            urls = list(remote_files)
    else:
        urls = list(local_files)
    _merge_index_from_list(urls, out, keep_local=keep_local, download_timeout=download_timeout)
