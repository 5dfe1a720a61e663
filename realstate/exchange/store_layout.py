"""Names every replica store shares, in a module with no imports so that any writer can ask
"is this directory a store?" before writing into it (outputs never go into a store)."""

MARKER_NAME = "CANONMERGE_STORE"
MARKER_TEXT = "canonmerge replica store 1\nfragments: <64 lowercase hex content id>.cmfrag\n"
MAX_MARKER_BYTES = 4096
