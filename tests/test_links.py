"""Links resolve to documents by path, stem, title or alias, and inbound counts stay current."""

from __future__ import annotations

import pytest

from autodoc.document import parse_document

from .conftest import write


def links(engine):
    with engine.store.snapshot() as conn:
        rows = conn.execute(
            "SELECT s.path AS source, l.target, t.path AS resolved FROM links l"
            " JOIN documents s ON s.id = l.source_id"
            " LEFT JOIN documents t ON t.id = l.target_id ORDER BY s.path, l.line, l.target"
        ).fetchall()
        inbound = dict(conn.execute("SELECT path, inbound FROM documents WHERE deleted = 0"))
    return [(r["source"], r["target"], r["resolved"]) for r in rows], inbound


def test_resolution_and_inbound_counts(engine, vault):
    write(
        vault,
        "adr/0003-store.md",
        "---\ntitle: Embedded store\naliases: [storage decision]\n---\n# Embedded store\n",
    )
    write(
        vault,
        "notes/a.md",
        """
        # A
        [[0003-store]] by stem, [[adr/0003-store]] by path, [[Embedded Store]] by title,
        [[storage decision|the ADR]] by alias, [rel](../adr/0003-store.md#context) relative,
        [[later note]] not yet, [[nowhere]] never.
        """,
    )
    write(vault, "notes/b.md", "# B\n\n[[a]] and [[A]] and [[b]]\n")
    engine.workspace_add("v", str(vault))
    engine.index_run("v")
    got, inbound = links(engine)
    resolved = {(s, t): r for s, t, r in got}
    for target in (
        "0003-store",
        "adr/0003-store",
        "Embedded Store",
        "storage decision",
        "../adr/0003-store.md",
    ):
        assert resolved[("notes/a.md", target)] == "adr/0003-store.md", target
    assert resolved[("notes/a.md", "later note")] is None
    assert resolved[("notes/b.md", "a")] == "notes/a.md"
    assert inbound == {
        "adr/0003-store.md": 1,
        "notes/a.md": 1,
        "notes/b.md": 0,
    }  # self-links don't count

    write(vault, "later note.md", "# Later\n")  # the target appears: the old link resolves
    engine.index_run("v")
    got, inbound = links(engine)
    assert {(s, t): r for s, t, r in got}[("notes/a.md", "later note")] == "later note.md"
    assert inbound["later note.md"] == 1

    (vault / "notes" / "a.md").unlink()  # the source goes: its links and their counts go
    engine.index_run("v")
    got, inbound = links(engine)
    assert all(s != "notes/a.md" for s, _, _ in got)
    assert inbound["adr/0003-store.md"] == 0 and inbound["later note.md"] == 0
    assert {(s, t): r for s, t, r in got}[("notes/b.md", "a")] is None


def _link_state(engine):
    got, inbound = links(engine)
    with engine.store.snapshot() as conn:
        pairs = sorted(
            conn.execute(
                "SELECT o.path, n.path FROM supersessions s JOIN documents o ON o.id = s.old_id"
                " JOIN documents n ON n.id = s.new_id"
            ).fetchall()
        )
    return got, inbound, [tuple(p) for p in pairs]


def test_a_targeted_run_resolves_links_as_a_full_run_would(engine, vault):
    """Saves re-index single files and re-resolve only the links those files can affect;
    after each step the links, inbound counts and supersessions equal a full resolution."""
    write(vault, "adr/0001.md", "---\ntitle: First\naliases: [the first]\n---\n# First\n")
    write(vault, "adr/0002.md", "# Second\n\nSuperseded by [[0003]].\n")
    write(vault, "notes/n.md", "# N\n\n[[the first]], [[First]], [[Third]], [[0002]].\n")
    engine.workspace_add("v", str(vault))
    engine.workspace_configure("v", {"embedding": "none"})
    engine.index_run("v")

    def check():
        targeted = _link_state(engine)
        ws = engine.workspace("v")
        from autodoc.indexer import Indexer

        with engine.store.transaction() as conn:
            Indexer(engine.store, engine.lexical(ws), ws)._resolve_links(conn)
        assert targeted == _link_state(engine)
        return targeted

    steps = [
        ("adr/0003.md", "---\ntitle: Third\n---\n# Third\n"),  # a new target: 2 links resolve
        ("adr/0001.md", "---\ntitle: Renamed\n---\n# Renamed\n"),  # names go: links unresolve
        ("notes/m.md", "# M\n\n[[Renamed]] and [[0003]].\n"),  # new source
        ("adr/0002.md", "# Second\n\nNo longer superseded.\n"),  # the relation goes
        ("adr/0004.md", "---\naliases: [the first]\n---\n# Fourth\n"),  # takes over an alias
    ]
    for rel, text in steps:
        write(vault, rel, text)
        engine.index_paths("v", [rel])
        check()
    got, inbound, pairs = check()
    resolved = {(s, t): r for s, t, r in got}
    assert resolved[("notes/n.md", "the first")] == "adr/0004.md"
    assert resolved[("notes/n.md", "First")] is None
    assert resolved[("notes/n.md", "Third")] == "adr/0003.md"
    assert inbound["adr/0003.md"] == 2 and pairs == []
    write(vault, "adr/0002.md", "# Second\n\nSuperseded by [[0003]].\n")
    engine.index_paths("v", ["adr/0002.md"])
    assert check()[2] == [("adr/0002.md", "adr/0003.md")]
    (vault / "adr" / "0003.md").unlink()  # the target goes
    engine.index_paths("v", ["adr/0003.md"])
    got, inbound, pairs = check()
    assert {(s, t): r for s, t, r in got}[("notes/n.md", "Third")] is None and pairs == []


@pytest.mark.parametrize(
    ("line", "relation"),
    [
        ("Superseded by [ADR 9](0009.md)", "superseded_by"),
        ("⌛️ Superseded by [036. Multi-cluster](0009.md)", "superseded_by"),
        ("⌛️ Superseded [0019](0009.md)", "superseded_by"),  # a status without "by"
        ("Superseded (as never implemented) by [ADR 9](0009.md)", "superseded_by"),
        ("> This decision is **superseded by [ADR-9](0009.md)**.", "superseded_by"),
        ("Status: Supersedes [ADR 9](0009.md)", "supersedes"),
        ("These IP ranges have been superseded by [ADR 9](0009.md)", ""),  # part of a record
        ("Supersession policy: see [ADR 9](0009.md)", ""),
        ("Superseded decisions are kept in [the archive](0009.md)", ""),  # not this record
        ("⌛️ Superseded: [ADR 9](0009.md)", "superseded_by"),
    ],
)
def test_a_line_that_says_the_record_is_superseded(line, relation):
    doc = parse_document(f"# Old\n\n{line}\n".encode(), "adr/0001.md")
    assert [(ln.target, ln.relation) for ln in doc.links] == [("0009.md", relation)]
