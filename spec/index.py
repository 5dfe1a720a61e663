"""The claim index as text: every registered check under its claim, for ``canonmerge claims``
and for the claim → check tables in docs/ (generated from the registry, and tested equal)."""

from __future__ import annotations

from spec.claims import CLAIMS, registered


def markdown_table(part: str | None = None) -> str:
    """A markdown table of the registered checks (of one part, or all), in claim order."""
    rows = ["| claim | part | check | expect | what must hold |", "|---|---|---|---|---|"]
    for c in registered(part):
        cell = c.statement.replace("|", "\\|")
        rows.append(f"| {c.claim} | {c.part} | {c.name} | {c.expect.value} | {cell} |")
    return "\n".join(rows) + "\n"


def claims_json() -> list[dict[str, object]]:
    return [{"claim": claim.id, "statement": claim.statement, "checked_by": list(claim.checked_by),
             "checks": [{"part": c.part, "check": c.name, "expect": c.expect.value, "statement": c.statement}
                        for c in registered(claim_id=claim.id)]}
            for claim in CLAIMS.values()]
