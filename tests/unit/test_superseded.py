"""Superseded demotion end to end (spec §4, issue 55): a small vault of a record and its
successor, indexed and searched through the dispatcher. When both appear, every hit of the
superseded record is listed below every hit of its successor, annotated, and shows a lower
relevance than the successor's lowest hit."""

from __future__ import annotations

import pytest

from ..conftest import lexical_workspace, write

OLD = "adr/0004-keep-ledger-entries-forever.md"
NEW = "adr/0009-ledger-retention-windows.md"


@pytest.fixture
def ledger(rpc, vault):
    write(vault, OLD, """
        # 4. Keep ledger entries forever

        Superseded by [ADR 9](0009-ledger-retention-windows.md)

        ## Context

        Ledger retention matters: every ledger entry is kept, and the retention of ledger entries
        has no window at all. Auditors read old ledger entries.

        ## Decision

        We keep ledger entries forever; ledger retention is unlimited and no ledger entry is pruned.

        ## Consequences

        The ledger grows without bound, since retention keeps each ledger entry; storage costs rise
        with every ledger entry kept.
        """)  # fmt: skip
    write(vault, NEW, """
        # 9. Ledger retention windows

        ## Context

        Ledger retention: ledger entries older than seven years are pruned, so ledger retention has
        a window, and the ledger entry retention rule is written here for the ledger.

        ## Decision

        A nightly job applies the rule to the ledger, after the auditors have signed off the
        quarter; the job logs what it removed and when it ran.

        ## Consequences

        Storage stops growing once the window is reached. The job needs monitoring and an alert
        when it fails, and the ledger's auditors get a report of each run of it.
        """)  # fmt: skip
    write(vault, "notes/storage.md", """
        # Storage costs

        The storage budget covers the database, the backups and the archive of the ledger.
        """)  # fmt: skip
    lexical_workspace(rpc, vault, "v")
    return rpc


def search(rpc, query: str, demote: bool = True) -> list[dict]:
    opts = {"retrieval": {"demote_superseded": demote}}
    return rpc.call("search.query", ["v", query, opts])["hits"]


def assert_below_every_successor_hit(hits: list[dict]) -> None:
    rows = [h["path"] for h in hits]
    new_rows = [i for i, p in enumerate(rows) if p == NEW]
    old_rows = [i for i, p in enumerate(rows) if p == OLD]
    assert new_rows and old_rows, rows
    assert min(old_rows) > max(new_rows), rows
    lowest = min(hits[i]["relevance"] for i in new_rows)
    assert all(hits[i]["relevance"] < lowest for i in old_rows), [h["relevance"] for h in hits]
    assert all(hits[i]["score"] < min(hits[j]["score"] for j in new_rows) for i in old_rows)
    assert all(hits[i]["superseded_by"] == NEW for i in old_rows)
    assert all("superseded_by" not in h for h in hits if h["path"] != OLD)
    shown = [h["relevance"] for h in hits]
    assert shown == sorted(shown, reverse=True)


def test_the_superseded_records_hits_go_below_all_of_its_successors(ledger):
    """Fused, the successor's hits are at rows 1, 5 and 6 and the superseded record's at 2-4;
    demotion left them there (they were below the successor's best hit)."""
    pair = (NEW, OLD)  # (a stage's first documents may list another note below them)
    plain = [h["path"] for h in search(ledger, "ledger entry retention", demote=False)]
    assert [p for p in plain if p in pair] == [NEW, OLD, OLD, OLD, NEW, NEW]
    hits = search(ledger, "ledger entry retention")
    assert [h["path"] for h in hits if h["path"] in pair] == [NEW, NEW, NEW, OLD, OLD, OLD]
    assert [h["path"] for h in hits][:6] == [NEW, NEW, NEW, OLD, OLD, OLD]
    assert_below_every_successor_hit(hits)


@pytest.mark.parametrize("query", ["ledger entries kept", "ledger grows storage costs"])
def test_a_superseded_record_never_ties_its_successors_relevance(ledger, query):
    """The superseded record's own words rank it above its successor: moved below, it showed
    the successor's relevance (capped at the row above)."""
    plain = [h["path"] for h in search(ledger, query, demote=False)]
    assert plain.index(OLD) < plain.index(NEW)
    assert_below_every_successor_hit(search(ledger, query))


def test_a_query_that_names_its_words_keeps_the_fused_order_annotated(ledger):
    """A quoted phrase names the words the answer holds: the superseded record keeps its
    place (and its scores) above its successor, and says what supersedes it."""
    hits = search(ledger, '"ledger entries"')
    assert [h["path"] for h in hits] == [OLD, OLD, OLD, NEW]
    plain = search(ledger, '"ledger entries"', demote=False)
    assert [h["score"] for h in hits] == [h["score"] for h in plain]
    assert all(h["superseded_by"] == NEW for h in hits[:3])
