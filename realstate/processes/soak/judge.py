"""The soak's verdict, from the stores themselves and the client's books.

Every replica is read through the product's store code: leftovers of killed writers cleaned
(and counted, and none may survive a clean with age 0: recovery complete), every fragment fully
validated, its set and render digest.  The acknowledged set comes from the ledger file the
clients wrote at acknowledgment time (``ledger``), never from the stores: an acknowledged id
missing from any replica is lost.  A replica that cannot be read is reported, never a pass.

The same function judges the real replicas and the canary (``canary_verdict``): a replica
whose one acknowledged write was deleted afterwards.  If the judge does not report that write
as lost it is blind, and the run says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from realstate.exchange.stores import DirectoryStore, open_store
from realstate.processes.soak.ledger import read_ledger
from spec import InputError, content_id_hex


def _read(location: str, s3_client: Any) -> dict[str, Any]:
    from realstate.kernel.render import canonical_render

    row: dict[str, Any] = {"replica": location, "kind": "s3" if location.startswith("s3://") else "directory",
                           "temporaries_cleaned": 0, "temporaries_left": 0, "ids": [], "digest": None,
                           "verify_ok": False, "error": None}
    try:
        store = open_store(location, s3_client=s3_client)
        row["kind"] = store.kind
        row["temporaries_cleaned"] = len(store.clean_temporaries(older_than_s=0))
        row["temporaries_left"] = len(store.temporaries())
        row["ids"] = sorted(content_id_hex(cid) for cid in store.listing())
        fragments = store.fragments()
        row["ids"] = sorted(content_id_hex(f.content_id) for f in fragments)
        row["digest"] = canonical_render(fragments).digest() if len(fragments) else None
        row["verify_ok"] = store.verify().ok and row["temporaries_left"] == 0
    except InputError as exc:
        row["error"] = str(exc)[:300]
    return row


def judge(replicas: list[str], ledger: Path, generated: set[str], s3_client: Any = None) -> dict[str, Any]:
    """Compare every replica with the others and with the books (module doc)."""
    rows = [_read(location, s3_client) for location in replicas]
    sets = {tuple(r["ids"]) for r in rows}
    digests = {r["digest"] for r in rows}
    union = set().union(*(set(r["ids"]) for r in rows))
    everywhere = set.intersection(*(set(r["ids"]) for r in rows))
    books = read_ledger(ledger)
    acknowledged = set().union(*books.values()) if books else set()
    return {"replicas": rows, "sets": len(sets), "digests": len(digests), "union": len(union),
            "generated": len(generated), "acknowledged": len(acknowledged),
            "lost": sorted(acknowledged - everywhere), "invented": sorted(union - generated),
            "unreadable": [r["replica"] for r in rows if r["error"] is not None]}


def lose(location: str, cid_hex: str) -> None:
    """The canary's loss: delete an acknowledged fragment's file behind the store's back."""
    DirectoryStore(location).path_of(cid_hex).unlink()


def canary_verdict(replica: str, ledger: Path, cid_hex: str, generated: set[str]) -> dict[str, Any]:
    """Judge the canary replica, whose acknowledged write ``cid_hex`` was lost: seen or blind."""
    verdict = judge([replica], ledger, generated)
    return {"lost_write": cid_hex, "reported_lost": verdict["lost"], "seen": cid_hex in verdict["lost"]}
