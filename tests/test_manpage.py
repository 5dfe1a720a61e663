"""docs/CLI.md carries every command's options as the parser prints them."""

from pathlib import Path

from canonmerge import manpage

CLI_MD = Path(__file__).resolve().parents[1] / "docs" / "CLI.md"


def test_every_command_has_an_options_block_that_is_current():
    text = CLI_MD.read_text()
    named = [m.group("name") for m in manpage.BLOCK.finditer(text)]
    assert sorted(named) == sorted(manpage.commands()), "docs/CLI.md lacks a command (or names one that is gone)"
    assert manpage.render(text) == text, "docs/CLI.md is stale: python -m canonmerge.manpage docs/CLI.md"


def test_a_stale_block_is_seen():
    stale = "<!-- options:prove -->\n```\nusage: canonmerge prove --gone\n```\n<!-- /options -->\n"
    assert manpage.render(stale) != stale
