"""Run in a subprocess by the negative tests: ``python oracle_mutant_driver.py ROOT...``.

For each scratch copy ROOT (packages with one planted bug each), drop every canonmerge module
already imported, import the copy's own ``spec``/``realstate``/``oracle`` afresh, and run the
oracle comparison (``realstate.oracle_bridge.check_against_oracle``) and the known-answer check
(``realstate.vectors.check_known_answers``) on it.  torch and transformers are imported once for
all copies — the only thing shared — which keeps the run to a few seconds.  Prints one JSON object:
{ROOT: {"oracle": row, "known_answers": [rows]}}."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

OURS = {"spec", "realstate", "oracle", "modelcheck", "proofs", "canonmerge", "audit", "tests"}


def _fresh_import(root: str) -> tuple[object, object, object, object]:
    for name in list(sys.modules):
        if name.split(".")[0] in OURS:
            del sys.modules[name]
    modules = [importlib.import_module(n) for n in
               ("realstate.oracle_bridge", "realstate.vectors", "realstate.fingerprint", "realstate.fragment")]
    for module in modules + [sys.modules["realstate.render"], sys.modules["oracle"], sys.modules["spec"]]:
        if not Path(module.__file__).resolve().is_relative_to(Path(root).resolve()):
            raise RuntimeError(f"{module.__name__} was imported from {module.__file__}, not from {root}")
    return tuple(modules)  # type: ignore[return-value]


def _fragments(fingerprint_module, fragment_module):
    """bf16 fragments, L = 4, non-zero starts, an equal-m twin and one with a NaN key in the middle
    layer; the middle-layer order of the first three is the reverse of their last-layer order."""
    import torch

    inv_freq = tuple(1.0 / (10000.0 ** (2 * i / 8)) for i in range(4))
    fp = fingerprint_module.Fingerprint("oracle-mutants", 4, 2, 8, "bfloat16", inv_freq, 10000.0, 1 << 16,
                                        "synthetic:oracle-mutants")
    out = []
    for i, (tokens, start) in enumerate(((3, 0), (2, 5), (4, 9))):
        g = torch.Generator().manual_seed(100 + i)
        keys = torch.randn(4, 2, tokens, 8, generator=g)
        keys[2] *= 1 + i  # middle layer: ascending in i
        keys[3] *= 4 - i  # last layer: descending in i
        values = torch.randn(4, 2, tokens, 8, generator=g)
        out.append(fragment_module.Fragment(fp, start, keys.to(torch.bfloat16), values.to(torch.bfloat16)))
    twin = fragment_module.Fragment(fp, 0, out[0].keys.flip(1).contiguous(), out[0].values.flip(1).contiguous())
    nan_keys = out[1].keys.clone()
    nan_keys.view(torch.int16)[2, 1, 0, 3] = -0x3F  # 0xffc1: a negative NaN with a payload, middle layer
    with_nan = fragment_module.Fragment(fp, 2, nan_keys, out[1].values)
    return out + [twin, with_nan]


def run(root: str) -> dict[str, object]:
    sys.path.insert(0, root)
    try:
        bridge, vectors, fingerprint_module, fragment_module = _fresh_import(root)
        f0, f1, f2, twin, with_nan = _fragments(fingerprint_module, fragment_module)
        arrival = [f2, f0, twin, f1, f0]
        cases = [("canonical", arrival, 0), ("canonical", arrival, 37), ("canonical", [with_nan, f2, f0], 11),
                 ("bag", [f1, f0, f1], 0), ("bag", [f1, f0, f1], 37), ("naive", [f1, f0], 37)]
        oracle_row = bridge.check_against_oracle(cases).to_json()
        known = [r.to_json() for r in vectors.check_known_answers()]
    finally:
        sys.path.remove(root)
    return {"oracle": oracle_row, "known_answers": known}


def main(roots: list[str]) -> int:
    import torch  # noqa: F401  (once, for every copy)
    import transformers  # noqa: F401

    print(json.dumps({root: run(root) for root in roots}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
