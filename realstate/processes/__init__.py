"""Real processes under faults: the soak (agents and anti-entropy under a nemesis) and the
distributed replay (torch.distributed ranks)."""
