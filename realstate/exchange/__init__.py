"""Fragments between processes and machines: the ``.cmfrag`` file format, output paths, and
replica stores (a directory, an S3 prefix) with anti-entropy between them."""
