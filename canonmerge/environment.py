"""The environment block of every JSON report: versions and machine, so a figure can be traced."""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from typing import Any

_PACKAGES = ("torch", "transformers", "z3-solver", "numpy", "safetensors", "hypothesis", "cvc5")


def describe_environment() -> dict[str, Any]:
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    from canonmerge import __version__

    return {
        "canonmerge": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "byteorder": sys.byteorder,
        "packages": versions,
    }
