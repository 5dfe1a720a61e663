"""The library kernel: fingerprints, fragments and content ids, the exact order value,
RoPE re-encoding (torch and the compiled kernels), the renders and the engine they are made of,
and the thread policy tensor work runs under.
It imports nothing of the project but ``spec``."""
