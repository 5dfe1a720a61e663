"""``canonmerge soak``: real processes converging under faults (Jepsen-style), on loopback only.

Agent processes publish fragments into their own replica stores (directories and S3 prefixes),
anti-entropy processes merge random pairs, and a nemesis injects faults: SIGKILL during a put
and during a merge, the S3 endpoint's front restarted mid-transfer, duplicated and reordered
merges, torn uploads.  At quiescence every replica must list the same set, render the same
SHA-256, and hold every acknowledged put.  Modules: ``settings`` (the bounded run),
``synthetic`` (seeded fragments), ``endpoint`` (a loopback S3 server), ``gateway`` (the
restartable TCP front), ``worker`` (the agent / anti-entropy process), ``nemesis`` (faults),
``harness`` (the run and its verdict).  Importing this package loads nothing heavy."""
