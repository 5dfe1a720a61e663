"""Known-answer vectors (like an RFC's test vectors): fixed fragments and what the definition says
about them — fingerprint digests, content ids, order values m, order keys, canonical orders and
render digests — computed here by the oracle alone.

``python -m oracle.known_answers`` prints the vectors as JSON (the committed copy is
``oracle/vectors.json``); ``--markdown`` prints the tables of docs/VECTORS.md.  The product
recomputes every answer with its own code (``realstate.replay.vectors.check_known_answers``).  A change
of any answer is a format change: regenerate deliberately, and say so in the change log.

The inputs are built by rules stated below so that a reader can rebuild them by hand:

* element (l, h, t, d) of fragment tensor with seed s holds q/4 where
  q = (11·l + 7·h + 5·t + 3·d + 13·s) mod 17 − 8, exactly representable in every format;
* then the listed special bit patterns overwrite single elements (±0, subnormals, the largest
  finite values, an infinity, NaNs with payloads);
* twins: "C" is "A" with its two heads swapped (same m, another id); "G" is "E" negated
  (same m, another id) — the ties the content id must break."""

from __future__ import annotations

import argparse
import hashlib
import json
import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from oracle.formats import storage_format
from oracle.identity import digest_with_inputs
from oracle.order import float_of_bits, order_value_bits
from oracle.render import FragmentData, RenderBytes, bag_render, canonical_render, naive_render

VECTORS_FORMAT = "canonmerge-known-answer-vectors"
VECTORS_VERSION = 1
LAYERS, HEADS, HEAD_DIM = 4, 2, 4
INV_FREQ = (1.0, 0.01)
ROPE_THETA = 10000.0
MAX_POSITIONS = 32768


def _f64_hex(x: float) -> str:
    return struct.pack(">d", x).hex()


def fingerprint_json(dtype: str) -> str:
    """The fingerprint in its canonical JSON spelling (docs/FORMAT.md: sorted keys, ``,``/``:``
    separators, lowercase hex float64 patterns).  Written out here, not taken from the product."""
    fields = {
        "version": 1,
        "architecture": "KnownAnswerVectors",
        "layers": LAYERS,
        "kv_heads": HEADS,
        "head_dim": HEAD_DIM,
        "dtype": dtype,
        "rope": "neox-rotate-half",
        "inv_freq_f64": [_f64_hex(f) for f in INV_FREQ],
        "rope_theta_f64": _f64_hex(ROPE_THETA),
        "max_positions": MAX_POSITIONS,
        "weights": "synthetic:canonmerge-known-answer-vectors-v1",
    }
    return json.dumps(fields, sort_keys=True, separators=(",", ":"))


def _middle_rows(rows: Sequence[Sequence[int]]) -> tuple[tuple[tuple[int, int, int, int], int], ...]:
    """Specials writing the whole middle layer (layer LAYERS // 2), its key vectors in order
    (head 0's tokens, then head 1's), as the given bit patterns."""
    tokens = len(rows) // HEADS
    return tuple(((LAYERS // 2, i // tokens, i % tokens, d), pattern)
                 for i, row in enumerate(rows) for d, pattern in enumerate(row))


@dataclass(frozen=True)
class FragmentSpec:
    """How one vector fragment is built: shape, start, seeds and the special elements."""

    label: str
    dtype: str
    tokens: int
    start: int
    key_seed: int
    value_seed: int
    key_specials: tuple[tuple[tuple[int, int, int, int], int], ...] = ()
    value_specials: tuple[tuple[tuple[int, int, int, int], int], ...] = ()
    twin_of: str = ""  # build from another fragment instead of the seeds
    twin: str = ""  # "swap-heads" or "negate"
    why: str = ""


FRAGMENTS: tuple[FragmentSpec, ...] = (
    FragmentSpec("A", "bfloat16", 2, 0, 1, 2,
                 key_specials=(((2, 0, 0, 1), 0x8000), ((2, 1, 1, 3), 0x0000), ((2, 0, 1, 2), 0x0001),
                               ((0, 1, 0, 0), 0x807F), ((1, 0, 1, 0), 0x7F7F), ((1, 0, 1, 2), 0xFF7F)),
                 value_specials=(((3, 1, 0, 2), 0x7FA5), ((0, 0, 1, 1), 0x8000)),
                 why="-0, +0 and subnormals in the middle layer; the largest finite values, whose "
                     "rotation overflows to infinity; a signalling-NaN value bit pattern that must "
                     "be copied untouched"),
    FragmentSpec("B", "bfloat16", 3, 5, 3, 4,
                 key_specials=(((0, 0, 2, 0), 0xFF80),),
                 why="starts at position 5; -inf in a key of layer 0 (rotates to infinities)"),
    FragmentSpec("C", "bfloat16", 2, 0, 0, 0, twin_of="A", twin="swap-heads",
                 why="A with its heads swapped: the same m as A, another content id"),
    FragmentSpec("D", "bfloat16", 1, 10, 5, 6, key_specials=(((2, 0, 0, 0), 0xFFC1),),
                 why="a negative NaN with a payload in the middle layer: m is the canonical +NaN"),
    FragmentSpec("E", "float32", 2, 0, 7, 8,
                 key_specials=(((2, 0, 0, 0), 0x80000000), ((2, 1, 0, 1), 0x00000001),
                               ((2, 0, 1, 3), 0x807FFFFF), ((3, 1, 1, 0), 0x7F7FFFFF),
                               ((3, 1, 1, 2), 0x7F7FFFFF)),
                 why="-0 and subnormals in the middle layer; the largest finite float32 in a "
                     "rotation pair (overflows)"),
    FragmentSpec("F", "float32", 2, 3, 9, 10, why="starts at position 3"),
    FragmentSpec("G", "float32", 2, 0, 0, 0, twin_of="E", twin="negate",
                 why="E with every key and value negated: the same m as E, another content id"),
    FragmentSpec("H", "float16", 2, 4, 11, 12,
                 key_specials=(((2, 0, 0, 0), 0x0001), ((2, 1, 1, 1), 0x83FF), ((1, 1, 0, 0), 0x7BFF),
                               ((1, 1, 0, 2), 0x7BFF)),
                 why="float16 subnormals in the middle layer; the largest finite float16 in a "
                     "rotation pair (overflows to infinity)"),
    FragmentSpec("I", "float16", 3, 0, 13, 14, why="a plain float16 fragment"),
    # m at rounding boundaries: the middle layer (layer 2) is written out in full, so the
    # squares and norms are exactly the ones listed; a row [0 0 0 0] has norm 0
    FragmentSpec("J", "float32", 1, 2, 15, 16,
                 key_specials=_middle_rows(((0x3FC00000, 0x32800000, 0x00000000, 0x00000200),
                                            (0, 0, 0, 0))),
                 why="middle rows [1.5, 2^-26, 0, 2^-140] and zeros: the squares 2.25 + 2^-52 sit "
                     "exactly half an ulp above 2.25 and only the subnormal's square 2^-280 "
                     "breaks the tie upwards, so the sum of squares must be the exact one rounded "
                     "once (a float64 or float32 running sum gives m = 0.75, not 0.75 + 2^-53)"),
    FragmentSpec("K", "float32", 2, 0, 17, 18,
                 key_specials=_middle_rows(((0x3FC00000, 0, 0, 0), (0x25000000, 0, 0, 0),
                                            (0x03800000, 0, 0, 0), (0, 0, 0, 0))),
                 why="norms 1.5, 2^-53, 2^-120 and 0: their total is half an ulp above 1.5 plus "
                     "2^-120, so the norms must be totalled exactly and rounded once (a running "
                     "float64 sum gives m = 0.375)"),
    FragmentSpec("L", "float32", 1, 1, 19, 20,
                 key_specials=_middle_rows(((0x5DC00000, 0x50800000, 0, 0x0D800000), (0, 0, 0, 0))),
                 why="middle row [1.5·2^60, 2^34, 0, 2^-100]: squares 2.25·2^120, 2^68 (half an ulp) "
                     "and 2^-200, 320 binary orders of magnitude apart, so the exact sum needs "
                     "several extraction levels and its last one decides the rounding"),
    FragmentSpec("M", "bfloat16", 1, 0, 21, 22,
                 key_specials=_middle_rows(((0x3FC0, 0x3280, 0, 0x0008), (0, 0, 0, 0))),
                 why="J in bfloat16 (the tail is the subnormal 2^-130): a 16-bit row whose plain "
                     "float64 sum of squares is not exact"),
    FragmentSpec("N", "float16", 1, 6, 23, 24,
                 key_specials=_middle_rows(((0x6E00, 0x0400, 0, 0x0001), (0, 0, 0, 0))),
                 why="middle row [6144, 2^-14, 0, 2^-24]: squares 2.25·2^24 + 2^-28 (half an ulp) + "
                     "2^-48: the float16 form of the same rounding boundary"),
    FragmentSpec("O", "bfloat16", 2, 3, 25, 26, key_specials=(((2, 1, 1, 2), 0x7F80),),
                 why="+inf in a key of the middle layer (and no NaN): m is +inf"),
    FragmentSpec("P", "bfloat16", 2, 0, 27, 28, key_specials=(((2, 0, 0, 1), 0x7F80), ((2, 1, 1, 3), 0x7FC0)),
                 why="+inf in the middle layer's first key vector and a NaN in its last: NaN wins (m is the "
                     "canonical NaN), also when the rows are taken a few at a time and the inf comes first"),
    FragmentSpec("Q", "bfloat16", 1, 0, 29, 30,
                 key_specials=_middle_rows(((0x3FC0, 0x2F80, 0x3280, 0x2F80), (0x2F80, 0x3280, 0x2F80, 0x3FC0))),
                 why="middle rows [1.5, 2^-32, 2^-26, 2^-32] and [2^-32, 2^-26, 2^-32, 1.5], no zero in them: "
                     "squares 2.25 + 2^-52 + 2^-63, half an ulp above 2.25 plus a little, which a pairwise "
                     "float64 sum in these orders rounds down; the smallest element is large enough that a "
                     "too-optimistic exactness test would keep that plain sum"),
    FragmentSpec("R", "bfloat16", 1, 0, 31, 32,
                 key_specials=_middle_rows(((0x3FC0, 0x2E80, 0x3280, 0x2E80), (0x2E80, 0x3280, 0x2E80, 0x3FC0))),
                 why="Q with 2^-34 for 2^-32 (squares 2.25 + 2^-52 + 2^-67): the smallest exponent field, 93, is "
                     "1 modulo 4, the case where an exponent read shifted the wrong way in 16 bits wraps to a "
                     "large positive field and the plain sum, which rounds, is kept"),
    FragmentSpec("S", "bfloat16", 1, 0, 33, 34,
                 key_specials=_middle_rows(((0x0A40, 0x0001, 0x0001, 0), (0x0001, 0x0A40, 0, 0x0001))),
                 why="middle rows [1.5·2^-107, 2^-133, 2^-133, 0] and a reordering: the subnormal 2^-133 squared "
                     "is 2^-266, a quarter of the last place of 2.25·2^-214, so each added alone is a tie rounded "
                     "away while the exact sum keeps both; an exactness test that reads a subnormal's exponent "
                     "as the smallest normal's keeps the plain sum"),
    FragmentSpec("T", "bfloat16", 1, 0, 35, 36,
                 key_specials=_middle_rows(((0x5336, 0x4981, 0x4981, 0x4980), (0x4981, 0x5336, 0x4980, 0x4981))),
                 why="middle rows [1.421875·2^39, 1.0078125·2^20 (twice), 2^20] and a reordering: large keys whose "
                     "squares end at 2^26, half the last place of the sum (2^27), so each is a tie the plain sum "
                     "rounds away; every element is above 2^7, where an exactness test that scales the exponent "
                     "by 3 instead of 2 (squaring) is too optimistic"),
    FragmentSpec("U", "bfloat16", 1, 0, 37, 38,
                 key_specials=_middle_rows(((0x3FC0, 0x3280, 0, 0), (0, 0x3FC0, 0x3280, 0))),
                 why="M without its subnormal tail: squares 2.25 + 2^-52, exactly half an ulp above 2.25, a tie "
                     "that the exact sum rounds to even (down); the 2^-52 lies in a lower extraction level and "
                     "no bit of it is dropped, so a sticky bit set anyway would round it up"),
    FragmentSpec("V", "float32", 1, 0, 39, 40,
                 key_specials=_middle_rows(((0x49895441, 0x3C9CC46F, 0x37218000, 0x36A1D600), (0x3A800000, 0, 0, 0))),
                 why="middle rows [9000001/8, 10273903·2^-29, 10336·2^-30, 20715·2^-32] and [2^-10, 0, 0, 0]: the "
                     "first row's squares sum to F + 2^-13 − (7/8)·2^-61, where F = x1² + 2^-12 has an odd last "
                     "bit: 7/8 of a unit of the second extraction level below the tie halfway to F's next "
                     "float64, so the exact sum rounds down to F; the last square rounds up in that level and "
                     "leaves −(7/8)·2^-61 for a third level only this row needs (the second row is finished: "
                     "the row is gathered). That level added with the wrong sign rounds up, and so does "
                     "dropping it (an exact tie, rounded to even), e.g. when a level's largest remainder is "
                     "taken as max(r) instead of max|r|: m moves by one ulp"),
)

FRAGMENTS_BY_LABEL = {spec.label: spec for spec in FRAGMENTS}

# (name, fragment labels): m of the fragments' middle layers laid side by side along the token
# axis — more key vectors than any one fragment has, a mix of rows whose plain float64 sum of
# squares is exact and rows whose sum is not
STACKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("bf16-stack", ("A", "B", "C", "M")),
    ("f16-stack", ("H", "I", "N")),
    ("f32-stack", ("E", "F", "G", "J", "K", "L")),
)

# (name, mode, fragment labels in input order, base); "nan-rotated" moves D's negative NaN with a
# payload (δ = −3): its key holds the canonical quiet NaN 0x7fc0 where the NaN lands
RENDERS: tuple[tuple[str, str, tuple[str, ...], int], ...] = (
    ("bf16-canonical-base0", "canonical", ("A", "B", "C"), 0),
    ("bf16-canonical-base1000", "canonical", ("A", "B", "C"), 1000),
    ("bf16-canonical-permuted-redelivered", "canonical", ("C", "B", "A", "C"), 0),
    ("bf16-canonical-nan-unrotated", "canonical", ("D", "A", "B", "C"), 3),
    ("bf16-canonical-nan-rotated", "canonical", ("D", "A", "B", "C"), 0),
    ("bf16-bag-duplicate", "bag", ("B", "A", "B"), 0),
    ("bf16-naive", "naive", ("B", "A"), 3),
    ("f32-canonical-base0", "canonical", ("E", "F", "G"), 0),
    ("f32-canonical-base12345", "canonical", ("G", "F", "E"), 12345),
    ("f32-bag", "bag", ("F", "E"), 2),
    ("f16-canonical-base0", "canonical", ("H", "I"), 0),
    ("f16-canonical-base777", "canonical", ("I", "H"), 777),
    # the last position a render may use is max_positions - 1: A, B, C hold 7 tokens
    ("bf16-canonical-ends-at-the-last-position", "canonical", ("A", "B", "C"), MAX_POSITIONS - 7),
)

# renders the definition refuses: a position past max_positions - 1 (name, mode, labels, base)
REFUSED: tuple[tuple[str, str, tuple[str, ...], int], ...] = (
    ("bf16-canonical-one-position-past-the-end", "canonical", ("A", "B", "C"), MAX_POSITIONS - 6),
    ("bf16-bag-one-position-past-the-end", "bag", ("C", "A"), MAX_POSITIONS - 3),
)


# fragments that keep their inputs (format version 2): (label, the fragment it extends, hidden, seed, why)
WITH_INPUTS: tuple[tuple[str, str, int, int, str], ...] = (
    ("A+inputs", "A", 3, 1, "A with inputs: the same keys and values, another id (version 2)"),
    ("E+inputs", "E", 5, 2, "E with inputs, float32"),
)


def _seeded_input_bits(dtype: str, tokens: int, hidden: int, seed: int) -> np.ndarray:
    token, column = np.meshgrid(np.arange(tokens), np.arange(hidden), indexing="ij")
    exact = (((5 * token + 3 * column + 13 * seed) % 17 - 8) / 4.0).astype(np.float32)
    if dtype == "float32":
        return exact.view(np.uint32).copy()
    if dtype == "bfloat16":
        return (exact.view(np.uint32) >> 16).astype(np.uint16)
    return exact.astype(np.float16).view(np.uint16).copy()


def _seeded_bits(dtype: str, tokens: int, seed: int) -> np.ndarray:
    layer, head, token, dim = np.meshgrid(np.arange(LAYERS), np.arange(HEADS), np.arange(tokens),
                                          np.arange(HEAD_DIM), indexing="ij")
    q = (11 * layer + 7 * head + 5 * token + 3 * dim + 13 * seed) % 17 - 8
    exact = (q / 4.0).astype(np.float32)  # q/4 has at most 4 significant bits: exact everywhere
    if dtype == "float32":
        return exact.view(np.uint32).copy()
    if dtype == "bfloat16":
        return (exact.view(np.uint32) >> 16).astype(np.uint16)
    return exact.astype(np.float16).view(np.uint16).copy()


def _apply(bits: np.ndarray, specials: Sequence[tuple[tuple[int, int, int, int], int]]) -> np.ndarray:
    out = bits.copy()
    for where, pattern in specials:
        out[where] = pattern
    return out


def _build(spec: FragmentSpec, built: dict[str, tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if spec.twin_of:
        keys, values = built[spec.twin_of]
        if spec.twin == "swap-heads":
            return keys[:, ::-1].copy(), values[:, ::-1].copy()
        sign = np.array(storage_format(spec.dtype).sign_mask, dtype=keys.dtype)
        return keys ^ sign, values ^ sign
    keys = _apply(_seeded_bits(spec.dtype, spec.tokens, spec.key_seed), spec.key_specials)
    values = _apply(_seeded_bits(spec.dtype, spec.tokens, spec.value_seed), spec.value_specials)
    return keys, values


def _hex_elements(bits: np.ndarray, digits: int) -> list[str]:
    return [f"{int(b):0{digits}x}" for b in bits.reshape(-1)]


def generate() -> dict[str, Any]:
    """Every vector, inputs and answers, as plain JSON data."""
    fingerprints = {}
    for dtype in ("bfloat16", "float16", "float32"):
        text = fingerprint_json(dtype)
        fingerprints[dtype] = {"canonical_json": text, "digest": hashlib.sha256(text.encode("ascii")).hexdigest()}
    built: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    data: dict[str, FragmentData] = {}
    fragments = {}
    for spec in FRAGMENTS:
        keys, values = built[spec.label] = _build(spec, built)
        fmt = storage_format(spec.dtype)
        digest = bytes.fromhex(fingerprints[spec.dtype]["digest"])
        f = data[spec.label] = FragmentData(digest, spec.dtype, LAYERS, HEADS, spec.tokens, HEAD_DIM, spec.start,
                                            keys.astype(fmt.bits_dtype).tobytes(),
                                            values.astype(fmt.bits_dtype).tobytes())
        fragments[spec.label] = {
            "why": spec.why,
            "dtype": spec.dtype,
            "shape": list(f.shape),
            "start": spec.start,
            "keys": _hex_elements(keys, fmt.width // 4),
            "values": _hex_elements(values, fmt.width // 4),
            "answers": {
                "content_id": f.content_id.hex(),
                "m_bits": f"{f.order_value_bits:016x}",
                "m": float_of_bits(f.order_value_bits).hex(),
                "order_key": f.order_key.hex(),
            },
        }
    with_inputs = {}
    for label, of, hidden, seed, why in WITH_INPUTS:
        base = data[of]
        fmt = storage_format(base.dtype)
        bits = _seeded_input_bits(base.dtype, base.tokens, hidden, seed)
        cid = digest_with_inputs(base.fingerprint_digest, fmt.code, base.shape, base.start, base.keys, base.values,
                                 bits.astype(fmt.bits_dtype).tobytes(), hidden)
        with_inputs[label] = {"why": why, "of": of, "shape": [base.tokens, hidden],
                              "inputs": _hex_elements(bits, fmt.width // 4), "answers": {"content_id": cid.hex()}}
    stacks = []
    for name, labels in STACKS:
        fmt = storage_format(FRAGMENTS_BY_LABEL[labels[0]].dtype)
        middle = np.concatenate([built[label][0][LAYERS // 2] for label in labels], axis=1)
        bits = order_value_bits(fmt, middle)
        stacks.append({"name": name, "inputs": list(labels),
                       "answers": {"m_bits": f"{bits:016x}", "m": float_of_bits(bits).hex()}})
    renders = []
    label_of = {f.content_id: label for label, f in data.items()}
    for name, mode, labels, base in RENDERS:
        inputs = [data[label] for label in labels]
        inv_freq = INV_FREQ
        result: RenderBytes = {"canonical": canonical_render, "bag": bag_render,
                               "naive": naive_render}[mode](inputs, inv_freq, base)
        renders.append({
            "name": name,
            "mode": mode,
            "inputs": list(labels),
            "base": base,
            "answers": {
                "layout": [[label_of[cid], offset] for cid, offset in result.layout],
                "tokens": result.shape[2],
                "digest": result.digest,
            },
        })
    refused = []
    for name, mode, labels, base in REFUSED:
        tokens = sum(data[label].shape[2] for label in labels)
        if base + tokens <= MAX_POSITIONS:
            raise AssertionError(f"{name} fits: it is not a refusal vector")
        refused.append({"name": name, "mode": mode, "inputs": list(labels), "base": base,
                        "answers": {"refused": f"positions {base}..{base + tokens - 1} pass the last position "
                                               f"{MAX_POSITIONS - 1}"}})
    return {
        "format": VECTORS_FORMAT,
        "version": VECTORS_VERSION,
        "inv_freq_f64": [_f64_hex(f) for f in INV_FREQ],
        "fingerprints": fingerprints,
        "fragments": fragments,
        "with_inputs": with_inputs,
        "stacks": stacks,
        "renders": renders,
        "refused": refused,
    }


def markdown(vectors: dict[str, Any]) -> str:
    """The tables of docs/VECTORS.md (between its BEGIN/END markers)."""
    lines = ["### Fingerprints", "", "| dtype | SHA-256 of the canonical JSON |", "|---|---|"]
    for dtype, fp in vectors["fingerprints"].items():
        lines.append(f"| {dtype} | `{fp['digest']}` |")
    lines += ["", "Canonical JSON (bfloat16; the others differ only in `dtype`):", "", "```",
              vectors["fingerprints"]["bfloat16"]["canonical_json"], "```", "", "### Fragments", ""]
    for label, f in vectors["fragments"].items():
        a = f["answers"]
        lines += [f"#### {label}: {f['dtype']}, shape {f['shape']}, start {f['start']}", "",
                  f["why"][:1].upper() + f["why"][1:] + ".", "",
                  "| answer | value |", "|---|---|",
                  f"| content id | `{a['content_id']}` |",
                  f"| m (float64 bits) | `{a['m_bits']}` (`{a['m']}`) |",
                  f"| order key | `{a['order_key']}` |", "",
                  "Element bit patterns, one line per (tensor, layer, head), tokens separated by `|`:", "", "```"]
        layers, heads, tokens, dim = f["shape"]
        for kind in ("keys", "values"):
            flat = f[kind]
            for layer in range(layers):
                for head in range(heads):
                    row = []
                    for token in range(tokens):
                        at = ((layer * heads + head) * tokens + token) * dim
                        row.append(" ".join(flat[at:at + dim]))
                    lines.append(f"{kind[0]}[{layer}][{head}] " + " | ".join(row))
        lines += ["```", ""]
    lines += ["### Fragments with inputs (format version 2)", "",
              "The fragment named, with its layer-0 inputs kept: another content id (magic `CMFRAG02`).", "",
              "| fragment | of | inputs shape | content id | inputs (bit patterns, row by row) |", "|---|---|---|---|---|"]
    for label, w in vectors["with_inputs"].items():
        tokens, hidden = w["shape"]
        rows = " / ".join(" ".join(w["inputs"][r * hidden:(r + 1) * hidden]) for r in range(tokens))
        lines.append(f"| {label} | {w['of']} | {w['shape']} | `{w['answers']['content_id']}` | {rows} |")
    lines += ["", "### Stacks", "", "m of the listed fragments' middle layers laid side by side along the token axis "
              "(head h of the stack is head h of each input, their tokens in input order):", "",
              "| name | inputs | m (float64 bits) |", "|---|---|---|"]
    for st in vectors["stacks"]:
        lines.append(f"| {st['name']} | {' '.join(st['inputs'])} | `{st['answers']['m_bits']}` "
                     f"(`{st['answers']['m']}`) |")
    lines += ["", "### Renders", "", "| name | mode | inputs (in order) | base | layout (fragment@offset) | digest |",
              "|---|---|---|---|---|---|"]
    for r in vectors["renders"]:
        a = r["answers"]
        layout = " ".join(f"{label}@{offset}" for label, offset in a["layout"])
        lines.append(f"| {r['name']} | {r['mode']} | {' '.join(r['inputs'])} | {r['base']} | {layout} | "
                     f"`{a['digest']}` |")
    lines += ["", "### Refused renders", "", "A render must not place a token past the fingerprint's last position "
              f"({MAX_POSITIONS - 1}): these must be refused (an input error), not rendered.", "",
              "| name | mode | inputs (in order) | base | why |", "|---|---|---|---|---|"]
    for r in vectors["refused"]:
        inputs = " ".join(r["inputs"])
        lines.append(f"| {r['name']} | {r['mode']} | {inputs} | {r['base']} | {r['answers']['refused']} |")
    return "\n".join(lines) + "\n"


def dumps(vectors: dict[str, Any]) -> str:
    return json.dumps(vectors, indent=1) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m oracle.known_answers",
                                     description="Print canonmerge's known-answer vectors, computed by the oracle.")
    parser.add_argument("--markdown", action="store_true", help="print the docs/VECTORS.md tables instead of JSON")
    args = parser.parse_args(argv)
    vectors = generate()
    sys.stdout.write(markdown(vectors) if args.markdown else dumps(vectors))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
