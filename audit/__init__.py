"""Source-level planted bugs, run against the product's own commands.

A check that cannot fail is a defect, and the strongest evidence that a check can fail is the
product's own command failing on a bug planted in the *source* of the code it is about — not a
wrapper around a backend, not a monkeypatch in a unit test.  ``audit.scratch`` makes a scratch
copy of the packages, applies an exact textual patch and runs ``python -m canonmerge ...`` on
the copy; the tests and ``canonmerge audit`` both use it."""

from audit.scratch import PACKAGES, Patch, PatchError, ScratchCopy, project_root

__all__ = ["PACKAGES", "Patch", "PatchError", "ScratchCopy", "project_root"]
