"""Known-answer vectors: the committed data is what the oracle computes, the product recomputes
every answer, the docs publish the same tables, and a changed answer fails the check.
(Source-level planted bugs that the vectors catch: tests/test_oracle_mutants.py.)"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import pytest

from oracle.known_answers import dumps, generate, markdown
from realstate.replay.vectors import check_known_answers, default_vectors_path, load_vectors
from spec import InputError

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- BEGIN GENERATED: python -m oracle.known_answers --markdown -->", "<!-- END GENERATED -->"


@pytest.fixture(scope="module")
def vectors():
    return load_vectors()


def test_the_committed_vectors_are_what_the_oracle_computes(vectors):
    assert default_vectors_path() == ROOT / "oracle" / "vectors.json"
    assert dumps(generate()) == default_vectors_path().read_text(encoding="utf-8")


def test_the_product_reproduces_every_known_answer():
    rows = check_known_answers()
    assert [(r.claim, r.outcome.value) for r in rows] == [("C5", "holds")] * 3 + [("C3", "holds")]
    assert all(r.part == "realstate" and r.figure.endswith("vectors match") for r in rows)
    # ids: 3 fingerprints x 2 + 22 fragments x 2 (contiguous, and strided: the copying path) + 2 with inputs;
    # m: 22 fragments and 3 stacks, each on 5 paths; keys: 22;
    # renders: 13 layouts + 13 digests x 5 paths (small; large: the compiled kernel on the process's
    # threads and on three, torch's at two chunk sizes) + 2 refusals
    assert sum(int(r.figure.split("/")[1].split()[0]) for r in rows) == 52 + 125 + 22 + 80


def test_docs_publish_the_generated_tables(vectors):
    text = (ROOT / "docs" / "VECTORS.md").read_text(encoding="utf-8")
    published = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert published.strip() == markdown(vectors).strip()


def test_a_few_answers_recomputed_by_hand(vectors):
    """A third, trivial implementation of the content id, and facts the vectors must show."""
    fps = vectors["fragments"]
    a = fps["A"]
    header = struct.pack("<8s32sB3xIIQIq", b"CMFRAG01", bytes.fromhex(vectors["fingerprints"]["bfloat16"]["digest"]),
                         1, 4, 2, a["shape"][2], 4, a["start"])
    raw = b"".join(int(h, 16).to_bytes(2, "little") for h in a["keys"] + a["values"])
    assert hashlib.sha256(header + raw).hexdigest() == a["answers"]["content_id"]
    assert fps["D"]["answers"]["m_bits"] == "7ff8000000000000"  # canonical NaN, whatever the key's NaN
    assert fps["D"]["answers"]["order_key"].startswith("fff8000000000000")
    assert fps["A"]["answers"]["m_bits"] == fps["C"]["answers"]["m_bits"]  # twins tie on m ...
    assert fps["E"]["answers"]["m_bits"] == fps["G"]["answers"]["m_bits"]
    assert fps["A"]["answers"]["content_id"] != fps["C"]["answers"]["content_id"]  # ... not on the key
    renders = {r["name"]: r for r in vectors["renders"]}
    assert renders["bf16-canonical-nan-unrotated"]["answers"]["layout"][-1] == ["D", fps["D"]["start"]]
    assert renders["bf16-canonical-nan-rotated"]["answers"]["layout"][-1] == ["D", fps["D"]["start"] - 3]
    assert (renders["bf16-canonical-base0"]["answers"]["digest"]
            == renders["bf16-canonical-permuted-redelivered"]["answers"]["digest"])
    assert (renders["bf16-canonical-base0"]["answers"]["digest"]
            != renders["bf16-canonical-base1000"]["answers"]["digest"])


def _tampered(tmp_path, change):
    data = json.loads(default_vectors_path().read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return {r.check.removeprefix("known answers: "): r for r in check_known_answers(path)}


def test_a_changed_answer_fails_its_row_and_names_the_vector(tmp_path):
    def flip(data):
        answer = data["renders"][3]["answers"]
        answer["digest"] = ("0" if answer["digest"][0] != "0" else "1") + answer["digest"][1:]

    rows = _tampered(tmp_path, flip)
    row = rows["render layouts and digests"]
    assert row.outcome.value == "fails" and row.figure == "75/80 vectors match"  # each path
    assert [m["vector"] for m in row.details["mismatches"]] == [
        "bf16-canonical-nan-unrotated digest", "bf16-canonical-nan-unrotated digest (canonical/chunk=8)",
        "bf16-canonical-nan-unrotated digest (canonical/chunk=8/threads=3)",
        "bf16-canonical-nan-unrotated digest (canonical/torch/chunk=8)",
        "bf16-canonical-nan-unrotated digest (canonical/torch/chunk=64)"]
    assert all(r.outcome.value == "holds" for name, r in rows.items() if name != "render layouts and digests")


def test_a_fingerprint_the_product_no_longer_reads_fails_as_a_format_change(tmp_path):
    def rename(data):
        fp = json.loads(data["fingerprints"]["float32"]["canonical_json"])
        fp["version"] = 2
        data["fingerprints"]["float32"]["canonical_json"] = json.dumps(fp)

    rows = _tampered(tmp_path, rename)
    problems = [m.get("problem", "") for m in rows["fingerprint digests and content ids"].details["mismatches"]]
    assert any("format change" in p for p in problems)
    assert rows["render layouts and digests"].outcome.value == "fails"


def test_unreadable_or_foreign_vector_files_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        load_vectors(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        load_vectors(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text('{"format": "something else"}', encoding="utf-8")
    with pytest.raises(InputError, match="not a canonmerge-known-answer-vectors file"):
        load_vectors(tmp_path / "other.json")


def test_a_render_past_the_last_position_must_be_refused(tmp_path):
    def widen(data):  # pretend the refused render were allowed: the product still refuses it
        data["refused"][0]["base"] -= 1  # now it fits: rendering it is not a refusal

    rows = _tampered(tmp_path, widen)
    row = rows["render layouts and digests"]
    assert row.outcome.value == "fails"
    assert row.details["mismatches"][0]["vector"] == "bf16-canonical-one-position-past-the-end"


def test_the_rotated_nan_vector_holds_the_canonical_quiet_nan_where_ds_nan_lands():
    """Rebuilt from the published inputs alone: D's negative NaN with a payload, moved by δ = −3,
    is 0x7fc0 in both halves of its rotation pair, and the render's digest is the published one."""
    import numpy as np

    import oracle

    vectors = json.loads(default_vectors_path().read_text(encoding="utf-8"))
    render = {r["name"]: r for r in vectors["renders"]}["bf16-canonical-nan-rotated"]
    digest = bytes.fromhex(vectors["fingerprints"]["bfloat16"]["digest"])
    inv_freq = tuple(struct.unpack(">d", bytes.fromhex(h))[0] for h in vectors["inv_freq_f64"])
    data = []
    for label in render["inputs"]:
        f = vectors["fragments"][label]
        layers, heads, tokens, head_dim = f["shape"]
        bits = [np.array([int(x, 16) for x in np.ravel(f[part])], dtype="<u2").tobytes() for part in ("keys", "values")]
        data.append(oracle.FragmentData(digest, "bfloat16", layers, heads, tokens, head_dim, f["start"], *bits))
    got = oracle.canonical_render(data, inv_freq, render["base"])
    assert got.digest == render["answers"]["digest"]
    keys = np.frombuffer(got.keys, dtype="<u2").reshape(got.shape)
    d_at = render["answers"]["layout"][-1][1]
    assert vectors["fragments"]["D"]["keys"] and keys[2, 0, d_at, 0] == keys[2, 0, d_at, 2] == 0x7FC0
    assert (oracle.storage_format("bfloat16").is_nan(keys) == (keys == 0x7FC0)).all()


def test_inputs_left_out_of_the_content_id_fail_the_realstate_command(tmp_path):
    """A bug planted in the source: a version-2 id that does not hash the inputs. The known-answer
    row of ``canonmerge realstate`` must fail it (exit 1)."""
    from audit import Patch, ScratchCopy
    from tests.audit_helpers import failing_rows

    patch = Patch("realstate/kernel/fragment.py", "    if inputs is not None:\n        _hash_bytes(h, inputs)\n",
                  "")
    out = ScratchCopy(tmp_path).apply(patch).run("realstate", "--agents", "2", "--latent-steps", "0", "--json",
                                                 timeout=900)
    assert out.returncode == 1, out.stderr[-2000:]
    assert ("C5", "known answers: fingerprint digests and content ids") in failing_rows(out.stdout)
