"""The audit's defaults, importable without mutmut or libcst (the CLI builds its parser from them)."""

PARTS = ("prove", "check", "realstate")  # what `canonmerge verify` runs, in its order
# every command the audit can run a mutant against, in the order it runs them: verify's parts, then
# the commands that exercise the instruments of real processes (the soak, the distributed replay, the bench)
ALL_PARTS = (*PARTS, "soak", "replicate", "bench")
# target groups (audit.targets.GROUPS): verify's code, and the checkers' own, with the parts each runs
GROUP_PARTS: dict[str, tuple[str, ...]] = {"verify": PARTS,
                                           "instruments": ("check", "realstate", "soak", "replicate", "bench")}
# the parts whose every process coverage follows (check's pool workers included), so that a statement
# their control run never executed is known unreached; the others' mutants always run
REACH_PARTS = PARTS
# the flags that make a command a quick audit run (verify's parts run on their defaults, exactly verify's);
# --fail-fast only where the command has it
PART_FLAGS: dict[str, tuple[str, ...]] = {
    "soak": ("--replicas", "3", "--s3-replicas", "1", "--agents", "2", "--fragments", "3", "--gossipers", "1",
             "--merges", "8", "--faults", "7", "--max-seconds", "30"),
    "replicate": ("--ranks", "2"),
    "bench": ("--geometry", "qwen3-tiny", "--quick", "--no-figures", "--bootstrap", "100"),
}
FAIL_FAST_PARTS = PARTS
ORIGINS = ("all", "mutmut", "curated")
DEFAULT_TIMEOUT_S = 3600.0
DEFAULT_TARGET_RATIO = 0.90
DEFAULT_WORKERS = 2
