"""Known-answer vectors recomputed with the product's own code (docs/VECTORS.md).

The vectors (``oracle/vectors.json``) were computed by the independent oracle; here every answer
is recomputed with realstate's ``Fingerprint``, ``Fragment`` (content id, order value, order key)
and renders, and any difference fails the claim it belongs to.  Only the JSON data is read from
the oracle's folder: none of its code is imported, so a silent change of the format or of the
arithmetic (a header byte, the canonical NaN, the statistic's layer) cannot pass."""

from __future__ import annotations

import importlib.util
import json
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from realstate.evidence.probes import large_path_engines
from realstate.kernel.dtypes import storage_dtype
from realstate.kernel.engine import CANONICAL
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment, content_id_of
from realstate.kernel.order_value import PATH_PROBES, exact_order_value
from realstate.kernel.render import Rendered, bag_render, canonical_render, naive_render
from realstate.replay import properties as P
from spec import Check, ClaimResult, InputError

VECTORS_FORMAT = "canonmerge-known-answer-vectors"


def default_vectors_path() -> Path:
    """``vectors.json`` in the oracle package's folder, found without importing the oracle."""
    spec = importlib.util.find_spec("oracle")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("known-answer vectors: the oracle package (which holds vectors.json) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "vectors.json"


def load_vectors(path: Path | None = None) -> dict[str, Any]:
    where = path or default_vectors_path()
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{where}: cannot read the known-answer vectors ({exc.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != VECTORS_FORMAT:
        raise InputError(f"{where}: not a {VECTORS_FORMAT} file")
    return data


def _strided(t: torch.Tensor) -> torch.Tensor:
    """The same elements as ``t``, bit for bit, in a non-contiguous view (every other element of a
    wider buffer): a content id of it takes tensor_bytes' copying path, which a Fragment's own
    contiguous tensors (read in place) never take."""
    wide = torch.zeros((*t.shape[:-1], 2 * t.shape[-1]), dtype=t.dtype, device=t.device)
    view = wide[..., ::2]
    view.copy_(t)
    return view


def _tensor(bits_hex: list[str], dtype: str, shape: list[int]) -> torch.Tensor:
    target = storage_dtype(dtype)
    width = torch.empty((), dtype=target).element_size()
    unsigned = np.array([int(h, 16) for h in bits_hex], dtype=np.uint16 if width == 2 else np.uint32)
    signed = unsigned.view(np.int16 if width == 2 else np.int32).reshape(shape)
    return torch.from_numpy(signed.copy()).view(target)


class _Rows:
    """Collects expected-versus-got differences per check and turns them into claim results."""

    def __init__(self) -> None:
        self.began = time.perf_counter()
        self.counts: dict[Check, int] = {}
        self.failures: dict[Check, list[dict[str, str]]] = {}

    def expect(self, claim: str, check: Check, vector: str, expected: Any, got: Any) -> None:
        key = check
        self.counts[key] = self.counts.get(key, 0) + 1
        if expected != got:
            self.failures.setdefault(key, []).append(
                {"vector": vector, "expected": str(expected), "got": str(got)})

    def fail(self, claim: str, check: Check, vector: str, problem: str) -> None:
        key = check
        self.counts[key] = self.counts.get(key, 0) + 1
        self.failures.setdefault(key, []).append({"vector": vector, "problem": problem})

    def results(self) -> list[ClaimResult]:
        seconds = time.perf_counter() - self.began
        out = []
        for check in (P.KNOWN_IDS, P.KNOWN_M, P.KNOWN_KEYS, P.KNOWN_RENDERS):
            total = self.counts.get(check, 0)
            bad = self.failures.get(check, [])
            out.append(check.tally(total, len(bad), "vectors", seconds,
                                   figure=f"{total - len(bad)}/{total} vectors match",
                                   **({"mismatches": bad[:10]} if bad else {})))
        return out


ID_CHECK, M_CHECK, KEY_CHECK, RENDER_CHECK = P.KNOWN_IDS, P.KNOWN_M, P.KNOWN_KEYS, P.KNOWN_RENDERS
_RENDERS: dict[str, Callable[..., Rendered]] = {"canonical": canonical_render, "bag": bag_render,
                                                "naive": naive_render}


def _bits(m: float) -> str:
    return f"{struct.unpack('<Q', struct.pack('<d', m))[0]:016x}"


def _inputs(rows: _Rows, claim: str, check: Check, entry: dict[str, Any],
            fragments: dict[str, Fragment]) -> list[Fragment] | None:
    """The entry's input fragments, or None after a failing row when one could not be built
    (its own rows already say why)."""
    if any(label not in fragments for label in entry["inputs"]):
        rows.fail(claim, check, entry["name"], "an input fragment could not be built")
        return None
    return [fragments[label] for label in entry["inputs"]]


# m of the key vectors repeated this many times is m itself (the exact total and the count both
# scale by a power of two), and with it every vector set fills several default-size blocks
TILES = 1 << 12


def _expect_m_on_every_path(rows: _Rows, name: str, expected: str, middle: torch.Tensor) -> None:
    """m again with each of ``PATH_PROBES``' settings (blocks, gathering, vectorized norm totals):
    these vectors are too small to take those paths by default; and on the vectors tiled ``TILES``
    times with the default settings, the path a real-size middle layer takes."""
    for probe in PATH_PROBES:
        setting = ", ".join(f"{k}={v}" for k, v in probe.items())
        rows.expect("C5", M_CHECK, f"{name} m ({setting})", expected, _bits(exact_order_value(middle, **probe)))
    rows.expect("C5", M_CHECK, f"{name} m (tiled {TILES}x, default blocks)", expected,
                _bits(exact_order_value(middle.repeat(1, TILES, 1))))


def check_known_answers(path: Path | None = None) -> list[ClaimResult]:
    """Recompute every known answer with the product's code: C5 rows for ids, m and keys, a C3
    row for the renders.  Each row fails on any difference and names the vector."""
    vectors = load_vectors(path)
    rows = _Rows()
    fingerprints: dict[str, Fingerprint] = {}
    for name, fp_vector in vectors["fingerprints"].items():
        try:
            fp = Fingerprint.from_json(json.loads(fp_vector["canonical_json"]))
        except InputError as exc:
            rows.fail("C5", ID_CHECK, f"fingerprint {name}", f"the product no longer reads this fingerprint "
                      f"({exc}): a format change; regenerate the vectors deliberately")
            continue
        fingerprints[name] = fp
        rows.expect("C5", ID_CHECK, f"fingerprint {name} canonical JSON", fp_vector["canonical_json"],
                    fp.canonical_bytes.decode("ascii"))
        rows.expect("C5", ID_CHECK, f"fingerprint {name} digest", fp_vector["digest"], fp.digest.hex())
    fragments: dict[str, Fragment] = {}
    for label, f in vectors["fragments"].items():
        if f["dtype"] not in fingerprints:
            rows.fail("C5", ID_CHECK, f"fragment {label}", f"no usable fingerprint for {f['dtype']}")
            continue
        fragment = Fragment(fingerprints[f["dtype"]], f["start"], _tensor(f["keys"], f["dtype"], f["shape"]),
                            _tensor(f["values"], f["dtype"], f["shape"]))
        fragments[label] = fragment
        answers = f["answers"]
        (m_bits,) = struct.unpack("<Q", struct.pack("<d", fragment.order_value))
        rows.expect("C5", ID_CHECK, f"fragment {label} content id", answers["content_id"], fragment.content_id.hex())
        rows.expect("C5", ID_CHECK, f"fragment {label} content id (strided tensors)", answers["content_id"],
                    content_id_of(fragment.fingerprint, fragment.start, _strided(fragment.keys),
                                  _strided(fragment.values)).hex())
        rows.expect("C5", M_CHECK, f"fragment {label} m", answers["m_bits"], f"{m_bits:016x}")
        _expect_m_on_every_path(rows, f"fragment {label}", answers["m_bits"], fragment.middle_layer_keys())
        rows.expect("C5", KEY_CHECK, f"fragment {label} order key", answers["order_key"], fragment.order_key.hex())
    for label, w in vectors.get("with_inputs", {}).items():
        base = fragments.get(w["of"])
        if base is None:
            rows.fail("C5", ID_CHECK, f"fragment {label}", f"extends {w['of']!r}, which did not load")
            continue
        inputs = _tensor(w["inputs"], base.fingerprint.dtype, w["shape"])
        kept = Fragment(base.fingerprint, base.start, base.keys, base.values, inputs)
        rows.expect("C5", ID_CHECK, f"fragment {label} content id (format version 2)", w["answers"]["content_id"],
                    kept.content_id.hex())
    for stack in vectors.get("stacks", []):
        if (stacked := _inputs(rows, "C5", M_CHECK, stack, fragments)) is None:
            continue
        middle = torch.cat([f.middle_layer_keys() for f in stacked], dim=1)
        m_bits = _bits(exact_order_value(middle))
        rows.expect("C5", M_CHECK, f"{stack['name']} m", stack["answers"]["m_bits"], m_bits)
        _expect_m_on_every_path(rows, stack["name"], stack["answers"]["m_bits"], middle)
    label_of = {f.content_id: label for label, f in fragments.items()}
    for r in vectors["renders"]:
        if (inputs := _inputs(rows, "C3", RENDER_CHECK, r, fragments)) is None:
            continue
        rendered = _RENDERS[r["mode"]](inputs, r["base"])
        layout = [[label_of.get(p.fragment.content_id, p.fragment.content_id.hex()[:12]), p.offset]
                  for p in rendered.layout]
        rows.expect("C3", RENDER_CHECK, f"{r['name']} layout", r["answers"]["layout"], layout)
        rows.expect("C3", RENDER_CHECK, f"{r['name']} digest", r["answers"]["digest"], rendered.digest())
        head_dim = inputs[0].keys.shape[-1]
        for engine in large_path_engines(CANONICAL, r["answers"]["tokens"], head_dim):
            rows.expect("C3", RENDER_CHECK, f"{r['name']} digest ({engine.name})", r["answers"]["digest"],
                        _RENDERS[r["mode"]](inputs, r["base"], engine).digest())
    for r in vectors.get("refused", []):
        if (inputs := _inputs(rows, "C3", RENDER_CHECK, r, fragments)) is None:
            continue
        try:
            rendered = _RENDERS[r["mode"]](inputs, r["base"])
        except InputError:
            rows.expect("C3", RENDER_CHECK, r["name"], "refused", "refused")
            continue
        rows.fail("C3", RENDER_CHECK, r["name"], f"rendered {rendered.tokens} tokens from base {r['base']}: "
                  f"must be refused ({r['answers']['refused']})")
    return rows.results()

