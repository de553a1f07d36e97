"""Query shapes read right (issue 55), through the real pipeline and the bundled model: a record
number is a number in a record's context, not any letter and digit (`S2`); a prefix keeps first
the note whose name it completes; a definition question prefers the note its term titles; the
learned floor never hides a retriever's own first documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autodoc.query import ranking
from autodoc.query.stages.fuse import SPARED_DOCUMENTS

from ..conftest import write


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


def test_a_prefix_keeps_first_the_note_whose_name_it_completes(rpc, tmp_path):
    """`looku*`: a reference note's many short command sections (`lookup: enable`, …) and a
    glossary line crowded out the note titled Lookup, which lexical and RRF rank first."""
    root = tmp_path / "ref"
    commands = "".join(
        f"## lookup: {verb}\n\nRun lookup {verb}.\n\n"
        for verb in ("enable", "disable", "reset", "show", "hide", "toggle", "focus", "clear")
    )
    write(root, "reference/commands.md", "# Commands\n\n" + commands)
    write(root, "reference/glossary.md", "# Glossary\n\n- lookup: the palette.\n- vault: a "
          "folder of notes.\n")  # fmt: skip
    write(root, "lookup.md", "# Lookup\n\nThe palette finds a note by its name as you type, "
          "creates one when none matches, and opens several at once with a modifier.\n\n"
          "## Modifiers\n\nEach modifier changes which notes the palette shows.\n")  # fmt: skip
    for n in range(6):
        write(root, f"journal/day-{n}.md", f"# Day {n}\n\nNothing much happened on day {n}.\n")
    indexed(rpc, root, "ref")
    answer = search(rpc, "ref", "looku*")
    assert answer["fusion"]["intent"] == "prefix"
    assert paths(answer)[0] == "lookup.md"
    # the promise keeps the column honest: the first hit reads at least as relevant as any
    assert answer["hits"][0]["relevance"] == max(h["relevance"] for h in answer["hits"])


def test_a_definition_question_prefers_the_note_its_term_titles(rpc, tmp_path):
    """`what is a vault`: a section that matched `what … this` was listed above the note
    titled Vault."""
    root = tmp_path / "kb"
    write(root, "vault.md", "# Vault\n\nA folder of notes with its own settings; a workspace "
          "holds one or more.\n")  # fmt: skip
    write(root, "sync.md", "# Sync\n\n## What this is\n\nWhat is a vault sync? This is what "
          "runs when you save: this copies a vault to the remote.\n")  # fmt: skip
    write(root, "faq.md", "# FAQ\n\n## What is this?\n\nThis is what a vault looks like to "
          "this tool: what you see is what it is.\n")  # fmt: skip
    for n in range(6):
        write(root, f"journal/day-{n}.md", f"# Day {n}\n\nNothing much happened on day {n}.\n")
    indexed(rpc, root, "kb")
    for query in ("what is a vault", "What's a vault?", "define vault", "what are vaults"):
        answer = search(rpc, "kb", query)
        assert paths(answer)[0] == "vault.md", query


@pytest.fixture
def strict_floor(monkeypatch, tmp_path):
    """The shipped model with a floor no hit reaches: what is listed is what the floor spares."""
    data = json.loads((Path(ranking.__file__).parent / ranking.MODEL_FILE).read_text("utf-8"))
    data["floor"] = 0.999999
    path = tmp_path / "strict-floor.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setenv(ranking.MODEL_ENV, str(path))


def test_the_floor_never_hides_a_retrievers_first_documents(places, strict_floor):
    """A record only the words found, third there, dropped out of the top 20: the floor now
    spares each stage's best hit of each of its first SPARED_DOCUMENTS documents, and only
    those when no hit reaches it."""
    query = "postgres kafka cells release decisions"
    firsts = {}
    for stage in ("lexical", "semantic"):  # no links, tags or successors: plain RRF of one
        # stage is its own order
        own = search(places, "places", query, stages=[stage], fusion="rrf")
        firsts[stage] = list(dict.fromkeys(paths(own)))[:SPARED_DOCUMENTS]
    assert len(firsts["lexical"]) == SPARED_DOCUMENTS
    answer = search(places, "places", query, stages=["lexical"])
    assert set(paths(answer)) == set(firsts["lexical"])
    assert answer["below_floor"] > 0
    answer = search(places, "places", query)
    assert set(paths(answer)) == set(firsts["lexical"]) | set(firsts["semantic"])
