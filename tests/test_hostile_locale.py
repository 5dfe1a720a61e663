"""Output under the C, POSIX and UTF-8 locales, on a pipe and on a terminal: every character a
command prints survives the output encoding.  Under ``LC_ALL=C`` (UTF-8 mode off) stdout is
ASCII, and a table cut with an ellipsis, a figure with a times sign or a path with an accent was
a ``UnicodeEncodeError`` traceback; now they are spelled in ASCII (``...``, ``x``, escapes)."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from canonmerge.channels import ascii_spelling
from canonmerge.cli import main
from tests.hostile_helpers import ROOT, World, make_world


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def long_file(world: World) -> str:
    """A fragment file whose path is long enough that its table cell is cut (with an ellipsis)."""
    path = world.root / ("a-long-directory-name-" * 6) / "in0.cmfrag"
    path.parent.mkdir()
    path.write_bytes(Path(world.files[0]).read_bytes())
    return str(path)


def c_locale(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUTF8": "0", "PYTHONIOENCODING": "", **extra}


def test_the_spelling_covers_the_ellipsis_and_escapes_the_rest():
    text = "cut\u2026 3 \u00d7 2 \u2264 7 na\u00efve \u2603 \U0001f600"
    assert text.encode("ascii", "canonmerge-ascii") == b"cut... 3 x 2 <= 7 na\\xefve \\u2603 \\U0001f600"
    with pytest.raises(UnicodeDecodeError):  # a decode error is not ours to paper over
        ascii_spelling(UnicodeDecodeError("ascii", b"\xff", 0, 1, "bad"))


def ascii_run(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> tuple[int, str, str]:
    """``main`` with stdout and stderr ASCII-only and strict, as under ``LC_ALL=C``."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict", write_through=True)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    code = main(argv)
    assert out.errors == "strict" and err.errors == "strict"  # put back as they were
    return code, out.buffer.getvalue().decode("ascii"), err.buffer.getvalue().decode("ascii")


def test_commands_print_whole_on_an_ascii_stdout(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    cut = long_file(world)
    accented = str(world.root / "na\u00efve\u2026.cmfrag")
    for argv, code, says in [
        (["fragment", "inspect", cut], 0, "..."),
        (["store", "list", str(world.store)], 0, "fragment"),
        (["store", "verify", str(world.store)], 0, ""),
        (["claims"], 0, "C1"),
        (["fragment", "inspect", accented], 2, "na\\xefve..."),
    ]:
        got, out, err = ascii_run(monkeypatch, argv)
        assert got == code and says in out + err and "Traceback" not in out + err, (argv, out[-800:], err)
    monkeypatch.undo()


def test_the_ellipsis_reaches_a_utf8_stdout_as_it_is(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """The spelling is a fallback: where the encoding holds the character, it is printed."""
    assert main(["fragment", "inspect", long_file(world)]) == 0
    assert "\u2026" in capsys.readouterr().out


@pytest.mark.parametrize("locale", ["C", pytest.param("POSIX", marks=pytest.mark.heavy),
                                    pytest.param("C.UTF-8", marks=pytest.mark.heavy)])
def test_on_a_pipe_under_each_locale(locale: str, world: World) -> None:
    cut = long_file(world)
    out = subprocess.run([sys.executable, "-m", "canonmerge", "fragment", "inspect", cut, world.at("gone\u2026")],
                         capture_output=True, timeout=120,
                         env=c_locale(LC_ALL=locale, LANG=locale))
    assert out.returncode == 2, out.stderr.decode(errors="replace")[-2000:]
    assert b"Traceback" not in out.stderr and b"1 valid, 1 refused" in out.stdout
    if locale == "C.UTF-8":
        assert "\u2026".encode() in out.stdout
    else:
        assert out.stdout.isascii() and out.stderr.isascii() and b"..." in out.stdout


def test_on_a_terminal_under_the_c_locale_a_cut_table_prints(world: World) -> None:
    """``store list`` on a 60-column terminal cuts its cells; on an ASCII terminal that was a
    traceback."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))
    process = subprocess.Popen([sys.executable, "-m", "canonmerge", "store", "list", str(world.store)],
                               stdin=subprocess.DEVNULL, stdout=follower, stderr=follower,
                               env=c_locale(LC_ALL="C", LANG="C", TERM="dumb"))
    os.close(follower)
    seen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        assert ready, "the command printed nothing for 120 s"
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the command closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert process.wait(timeout=60) == 0, seen.decode(errors="replace")
    assert b"Traceback" not in seen and seen.isascii() and b"..." in seen, seen.decode(errors="replace")
