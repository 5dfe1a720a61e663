"""The thread policy: small tensor work on one thread, large work on the allowance, one
``--threads`` flag on every command, and results that do not depend on either."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from canonmerge import cli
from realstate.kernel import order_value, rope, threads
from realstate.kernel.render import canonical_render
from spec import ArgumentError
from tests.realstate_helpers import random_fragment, tiny_fingerprint

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_threads_for_gives_one_thread_per_share_of_work():
    per = threads.ELEMENTS_PER_THREAD
    assert threads.threads_for(1, allowance=8) == 1
    assert threads.threads_for(2 * per - 1, allowance=8) == 1
    assert threads.threads_for(3 * per, allowance=8) == 3
    assert threads.threads_for(100 * per, allowance=8) == 8
    assert threads.threads_for(100 * per, allowance=1) == 1


def test_limited_lowers_torch_threads_inside_and_restores_them(two_threads):
    with threads.limited(1 << 16) as inside:
        assert inside == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with threads.limited(64 * threads.ELEMENTS_PER_THREAD) as inside:  # large: the allowance, never more
        assert inside == 2 and torch.get_num_threads() == 2
    with pytest.raises(RuntimeError), threads.limited(1 << 16):
        raise RuntimeError("an error inside still restores the allowance")
    assert torch.get_num_threads() == 2


def _threads_seen_by(monkeypatch: pytest.MonkeyPatch, name: str, call) -> list[int]:
    """torch's thread count at every call of ``torch.Tensor.<name>`` (or ``torch.<name>``)
    made while ``call`` runs."""
    seen: list[int] = []
    owner = torch.Tensor if hasattr(torch.Tensor, name) else torch
    original = getattr(owner, name)

    def recording(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, recording)
    call()
    monkeypatch.setattr(owner, name, original)
    return seen


def test_the_order_values_staging_copies_run_on_one_thread(monkeypatch, two_threads):
    keys = (torch.randn(8, 2000, 128, generator=torch.Generator().manual_seed(0)) * 3).to(torch.bfloat16)
    seen = _threads_seen_by(monkeypatch, "copy_", lambda: order_value.exact_order_value(keys))
    assert seen and set(seen) == {1}
    # the instrument can see two threads: a copy of the same size outside the policy
    staging = torch.empty(512, 128, dtype=torch.float64)
    control = _threads_seen_by(monkeypatch, "copy_", lambda: staging.copy_(keys[0, :512]))
    assert control == [2]


def _fragments():
    fp = tiny_fingerprint(layers=4, heads=2, head_dim=64)
    return [random_fragment(fp, n, seed=n, start=3) for n in (40, 60, 80)]


def test_a_small_render_runs_on_one_thread_and_a_large_one_on_the_allowance(monkeypatch, two_threads):
    small = _fragments()  # 46,080 key elements: above torch's grain, far below a thread's share
    assert set(_threads_seen_by(monkeypatch, "cat", lambda: canonical_render(small))) == {1}
    monkeypatch.setattr(threads, "ELEMENTS_PER_THREAD", 1 << 10)  # the same render counted as large
    assert set(_threads_seen_by(monkeypatch, "cat", lambda: canonical_render(small))) == {2}


def test_renders_and_the_order_value_give_the_same_bits_on_any_thread_count(monkeypatch, two_threads):
    frags = _fragments()
    keys = frags[0].middle_layer_keys()
    small = canonical_render(frags).digest(), order_value.exact_order_value(keys).hex()
    monkeypatch.setattr(threads, "ELEMENTS_PER_THREAD", 1 << 10)  # everything split between two threads
    monkeypatch.setattr(rope, "CHUNK_ELEMENTS", 1 << 12)  # and the large-render path taken
    assert (canonical_render(frags).digest(), order_value.exact_order_value(keys).hex()) == small


@pytest.mark.parametrize("value", [0, -1, 1025, True, 2.0])
def test_configure_refuses_a_bad_allowance_naming_threads(value):
    with pytest.raises(ArgumentError) as caught:
        threads.configure(value)
    assert caught.value.argument == "threads"


def test_configure_sets_torch_threads(two_threads):
    assert threads.configure(1) == 1 and torch.get_num_threads() == 1
    assert threads.configure() == threads.default_threads() == torch.get_num_threads()
    assert 1 <= threads.default_threads() <= threads.DEFAULT_CAP


def test_configure_before_torch_loads_reaches_torch_without_loading_it():
    code = ("import sys; from realstate.kernel import threads\n"
            "threads.configure(1); assert 'torch' not in sys.modules\n"
            "import torch; assert torch.get_num_threads() == 1, torch.get_num_threads()")
    env = {**os.environ, "OMP_NUM_THREADS": "2"}  # what the process started with: configure overrides it
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env=env)


@pytest.mark.parametrize("command", ["claims", "prove", "verify", "fragment", "store"])
def test_every_command_refuses_a_bad_threads_flag_with_exit_2(command, capsys):
    argv = [command] + (["inspect", "x.cmfrag"] if command == "fragment" else
                        ["list", "s"] if command == "store" else []) + ["--threads", "0"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "--threads 0: must be an integer in 1..1,024" in err and "Traceback" not in err


def test_every_command_takes_threads():
    parser = cli.build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name, sub in commands.items():
        full = cli.build_parser(only=name)._subparsers._group_actions[0].choices[name]  # type: ignore[union-attr]
        assert "--threads" in full._option_string_actions, name
