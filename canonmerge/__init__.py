"""The ``canonmerge`` command line: thin glue that runs the parts and prints their reports."""

__version__ = "0.1.0"
