"""The audit's defaults, importable without mutmut or libcst (the CLI builds its parser from them)."""

PARTS = ("prove", "check", "realstate")  # what `canonmerge verify` runs, in its order
ORIGINS = ("all", "mutmut", "curated")
DEFAULT_TIMEOUT_S = 3600.0
DEFAULT_TARGET_RATIO = 0.90
DEFAULT_WORKERS = 2
