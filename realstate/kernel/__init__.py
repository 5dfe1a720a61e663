"""The library kernel: fingerprints, fragments and content ids, the exact order value,
RoPE re-encoding (torch and the compiled kernel), the renders and the engine they are made of.
It imports nothing of the project but ``spec``."""
