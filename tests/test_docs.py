"""The documents a user reads first: README is a short user's document whose links resolve, and
README, docs and source speak of what the project is, never of how or when it was built."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 220
HISTORY = re.compile(r"\bsessions?\b|\bissue [0-9]+|seed 00[0-9]|\b00[0-9]_[0-9a-f]{16}\b|\bfirst name\b", re.I)
NOT_HISTORY = re.compile(r"boto3|botocore|start_new_session|pytest|\bray\b|Session\(", re.I)
SOURCE_ROOMS = ("spec", "oracle", "proofs", "modelcheck", "realstate", "canonmerge", "audit", "benchmarks", "examples")


def history_lines(path: Path, text: str) -> list[str]:
    """Lines that narrate the project's own development (the same rule as the repository's hook)."""
    return [f"{path.relative_to(ROOT) if path.is_absolute() else path}:{n}: {line.strip()}"
            for n, line in enumerate(text.splitlines(), 1)
            if HISTORY.search(line) and not NOT_HISTORY.search(line)]


def documents() -> list[Path]:
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for room in SOURCE_ROOMS:
        paths += sorted(p for p in (ROOT / room).rglob("*.py") if "__pycache__" not in p.parts)
    return paths


def test_readme_is_a_short_users_document():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES})"


def test_readme_keeps_the_test_command_after_its_marker():
    """``.ci/run`` runs the first line after the marker that is neither blank nor a fence."""
    text = (ROOT / "README.md").read_text()
    after = text.split("<!-- test-command -->", 1)[1]
    command = next(line for line in after.splitlines() if line.strip() and not line.startswith("```"))
    assert command.startswith("pip install torch==2.13.0 && ") and "python -m pytest" in command


def test_readme_links_resolve():
    text = (ROOT / "README.md").read_text()
    targets = {t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t}
    missing = sorted(t for t in targets if t and not (ROOT / t).exists())
    assert not missing, missing


def test_no_document_or_source_narrates_its_own_development():
    found = [hit for p in documents() for hit in history_lines(p, p.read_text())]
    assert not found, "\n".join(found)


def test_the_history_check_sees_a_narrative_and_spares_third_party_words():
    """A check that cannot fail is a defect."""
    planted = ("Measured in the sixth session (issue 12).\n"
               "from seed `000_c2961ccc34f08055.txt`\n"
               "client = boto3.session.Session().client('s3')\n"
               "subprocess.Popen(cmd, start_new_session=True)\n")
    hits = history_lines(Path("planted.md"), planted)
    assert [h.split(":")[1] for h in hits] == ["1", "2"]
