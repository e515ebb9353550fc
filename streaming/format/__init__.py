"""On-disk formats: index.json model, MDS/JSON/XSV shards, encodings, compression, hashes."""
