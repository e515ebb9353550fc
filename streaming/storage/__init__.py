"""Moving bytes: URL -> fsspec filesystem, downloads, uploads, and the local shard cache."""
