"""Query shapes read right (issue 55), through the real pipeline and the bundled model: a record
number is a number in a record's context, not any letter and digit (`S2`); a prefix keeps first
the note whose name it completes; a definition question prefers the note its term titles; the
learned floor never hides a retriever's own first documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import write


def search(rpc, ws: str, query: str, **opts):
    return rpc.call("search.query", [ws, query, {"limit": 20, **opts}])


def paths(answer) -> list[str]:
    return [h["path"] for h in answer["hits"]]


def indexed(rpc, root: Path, name: str, embedding: str = "bundled"):
    rpc.call("workspace.add", [name, str(root)])
    rpc.call("workspace.configure", [name, {"embedding": embedding}])
    rpc.call("index.run", [name])
    return rpc


RECORDS = {
    "adr/0001-record-decisions.md": "# 1. Record decisions\n\nWe write a record per decision.\n",
    "adr/0002-use-postgres.md": "# 2. Use Postgres\n\nEvery table lives in one Postgres.\n",
    "adr/0003-use-kafka.md": "# 3. Use Kafka\n\nEvents go through a Kafka broker.\n",
}


@pytest.fixture
def places(rpc, tmp_path):
    """Three records, the note that answers about S2 cells (its name holds no S2) and a note
    titled with S2 about something else."""
    root = tmp_path / "places"
    for rel, text in RECORDS.items():
        write(root, rel, text)
    write(root, "notes/spatial-index.md", "# Spatial index\n\nPlaces are bucketed into S2 cells "
          "at level 13; a search covers its circle with cells of that level.\n")  # fmt: skip
    write(root, "geo/s2-geometry.md", "# S2 geometry\n\nThe vendored library is pinned to one "
          "release; upgrades go through review.\n")  # fmt: skip
    return indexed(rpc, root, "places")


def test_a_letter_and_digit_in_a_query_is_no_record_number(places):
    """`S2 cells level` once read as "record 2": the names pass listed record 2 (and the note
    titled S2) above the note both retrievers rank first."""
    answer = search(places, "places", "S2 cells level")
    found = paths(answer)
    assert found[0] == "notes/spatial-index.md"
    assert "adr/0002-use-postgres.md" not in found[:2]
    assert answer["fusion"]["intent"] == "words"
    for query in ("v1 cells level", "L2 cells level", "x86 cells level"):
        assert search(places, "places", query)["fusion"]["intent"] == "words"


def test_a_record_number_in_its_context_still_names_the_record(places):
    for query in ("adr 2", "ADR-0002", "#2", "0002", "2"):
        answer = search(places, "places", query)
        assert answer["fusion"]["intent"] == "number", query
        assert paths(answer)[0] == "adr/0002-use-postgres.md", query


def test_a_title_holding_a_letter_and_digit_is_not_that_records(places):
    """The index agrees with the query: `S2 geometry` is no name of record 2, so `adr 2`'s
    names pass (required: 2 in a title or path) does not list it."""
    answer = search(places, "places", "adr 2", stages=["lexical"])
    assert "geo/s2-geometry.md" not in paths(answer)
