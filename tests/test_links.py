"""Links resolve to documents by path, stem, title or alias, and inbound counts stay current."""

from __future__ import annotations

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
