"""The bit-for-bit replay of the claims on caches from a real transformers model
(``canonmerge realstate``)."""
