"""Links resolve to documents by path, stem, title or alias, and inbound counts stay current."""

from __future__ import annotations

import pytest

from autodoc.parse.document import parse_document

from ..conftest import write


def links(engine, kind: str = ""):
    """(source, target, resolved path) of every link (of one kind), and inbound counts."""
    with engine.store.snapshot() as conn:
        rows = conn.execute(
            "SELECT s.path AS source, l.target, t.path AS resolved FROM links l"
            " JOIN documents s ON s.id = l.source_id"
            " LEFT JOIN documents t ON t.id = l.target_id WHERE ? IN ('', l.kind)"
            " ORDER BY s.path, l.line, l.target",
            (kind,),
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
    engine.workspaces.workspace_add("v", str(vault))
    engine.indexing.index_run("v")
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
    engine.indexing.index_run("v")
    got, inbound = links(engine)
    assert {(s, t): r for s, t, r in got}[("notes/a.md", "later note")] == "later note.md"
    assert inbound["later note.md"] == 1

    (vault / "notes" / "a.md").unlink()  # the source goes: its links and their counts go
    engine.indexing.index_run("v")
    got, inbound = links(engine)
    assert all(s != "notes/a.md" for s, _, _ in got)
    assert inbound["adr/0003-store.md"] == 0 and inbound["later note.md"] == 0
    assert {(s, t): r for s, t, r in got}[("notes/b.md", "a")] is None


def _link_state(engine):
    got, inbound = links(engine)
    with engine.store.snapshot() as conn:
        pairs = conn.execute(
            "SELECT o.path, n.path FROM supersessions s JOIN documents o ON o.id = s.old_id"
            " JOIN documents n ON n.id = s.new_id"
        ).fetchall()
    return got, inbound, sorted(tuple(p) for p in pairs)


def test_a_targeted_run_resolves_links_as_a_full_run_would(engine, vault):
    """Saves re-index single files and re-resolve only the links those files can affect;
    after each step the links, inbound counts and supersessions equal a full resolution."""
    write(vault, "adr/0001.md", "---\ntitle: First\naliases: [the first]\n---\n# First\n")
    write(vault, "adr/0002.md", "# Second\n\nSuperseded by [[0003]].\n")
    write(vault, "notes/n.md", "# N\n\n[[the first]], [[First]], [[Third]], [[0002]].\n")
    engine.workspaces.workspace_add("v", str(vault))
    engine.workspaces.workspace_configure("v", {"embedding": "none"})
    engine.indexing.index_run("v")

    def check():
        targeted = _link_state(engine)
        ws = engine.workspace("v")
        from autodoc.index.indexer import Indexer

        with engine.store.transaction() as conn:
            Indexer(engine.store, engine.lexical(ws), ws).links.resolve(conn, everything=True)
        assert targeted == _link_state(engine)
        return targeted

    steps = [
        ("adr/0003.md", "---\ntitle: Third\n---\n# Third\n"),  # a new target: 2 links resolve
        ("adr/0001.md", "---\ntitle: Renamed\n---\n# Renamed\n"),  # names go: links unresolve
        ("notes/m.md", "# M\n\n[[Renamed]] and [[0003]].\n"),  # new source
        ("adr/0002.md", "# Second\n\nNo longer superseded.\n"),  # the relation goes
        ("adr/0004.md", "---\naliases: [the first]\n---\n# Fourth\n"),  # takes over an alias
        ("adr/0005.md", "# Five\n\nSuperseded by ADR-6.\n"),  # a record link, unresolved
        ("adr/0006-new.md", "# Six\n"),  # record 6 appears: 0005 is superseded
        ("adr/0006-dup.md", "# Six again\n"),  # two records 6: the pair goes
    ]
    for rel, text in steps:
        write(vault, rel, text)
        engine.indexing.index_paths("v", [rel])
        check()
    got, inbound, pairs = check()
    resolved = {(s, t): r for s, t, r in got}
    assert resolved[("notes/n.md", "the first")] == "adr/0004.md"
    assert resolved[("notes/n.md", "First")] is None
    assert resolved[("notes/n.md", "Third")] == "adr/0003.md"
    assert inbound["adr/0003.md"] == 2 and pairs == []
    assert resolved[("adr/0005.md", "6")] is None  # two records 6
    write(vault, "adr/0002.md", "# Second\n\nSuperseded by [[0003]].\n")
    engine.indexing.index_paths("v", ["adr/0002.md"])
    assert check()[2] == [("adr/0002.md", "adr/0003.md")]
    (vault / "adr" / "0003.md").unlink()  # the target goes
    engine.indexing.index_paths("v", ["adr/0003.md"])
    got, inbound, pairs = check()
    assert {(s, t): r for s, t, r in got}[("notes/n.md", "Third")] is None and pairs == []


@pytest.mark.parametrize(
    ("line", "relation", "records"),
    [
        ("Superseded by [ADR 9](0009.md)", "superseded_by", ["9"]),
        ("⌛️ Superseded by [036. Multi-cluster](0009.md)", "superseded_by", ["36"]),
        ("⌛️ Superseded [0019](0009.md)", "superseded_by", ["19"]),  # a status without "by"
        ("Superseded (as never implemented) by [ADR 9](0009.md)", "superseded_by", ["9"]),
        ("> This decision is **superseded by [ADR-9](0009.md)**.", "superseded_by", ["9"]),
        ("Status: Supersedes [ADR 9](0009.md)", "supersedes", ["9"]),
        ("These IP ranges have been superseded by [ADR 9](0009.md)", "", []),  # part of a record
        ("Supersession policy: see [ADR 9](0009.md)", "", []),
        ("Superseded decisions are kept in [the archive](0009.md)", "", []),  # not this record
        ("⌛️ Superseded: [ADR 9](0009.md)", "superseded_by", ["9"]),
    ],
)
def test_a_line_that_says_the_record_is_superseded(line, relation, records):
    doc = parse_document(f"# Old\n\n{line}\n".encode(), "adr/0001.md")
    assert [(ln.target, ln.relation) for ln in doc.links if ln.kind == "md"] == [
        ("0009.md", relation)
    ]
    assert [(ln.target, ln.relation, ln.line) for ln in doc.links if ln.kind == "record"] == [
        (n, relation, 3) for n in records
    ]


BY = "superseded_by"


@pytest.mark.parametrize(
    ("text", "records"),
    [
        ("Superseded (as never implemented) by [ADR 32](/adr/32)", [("32", "superseded_by")]),
        ("Superseded by [ADR 23](/adr/23), [ADR 26](/adr/26)", [("23", BY), ("26", BY)]),
        ("Superseded by ADR-0032 (no link at all)", [("32", "superseded_by")]),
        ("[ADR-293](/adr/ADR-293) superseded by the new client", []),  # not a status line
        ("superseded by release 1.5", []),  # no record named
        ("---\nstatus: superseded by ADR-0057\n---\n", [("57", "superseded_by")]),
        ("---\nstatus: accepted; supersedes ADR-0045\n---\n", [("45", "supersedes")]),
        ("---\nstatus: Accepted\nreason: see ADR-3\n---\n", []),
        ("---\nsuperseded_by: 57\n---\n", [("57", "superseded_by")]),
        ("---\nstatus: Deprecated\ndeprecated-reason: Gone, see ADR-293.\n---\n", [("293", BY)]),
        ("---\nstatus: true\nreplaced_by: [ADR-7, 8]\n---\n", [("7", "superseded_by")]),
    ],
)  # fmt: skip
def test_a_record_named_by_number_where_a_status_names_its_successor(text, records):
    doc = parse_document(f"{text}\n# Old\n".encode(), "adr/0001.md")
    assert [(ln.target, ln.relation) for ln in doc.links if ln.kind == "record"] == records


def _pairs(engine):
    return _link_state(engine)[2]


def test_record_links_resolve_by_number_in_the_folder_and_only_as_a_fallback(engine, vault):
    """A status that names its successor by number ("ADR 32", a site link `/adr/32`) finds the
    one document of the same folder whose file name carries that number; not one elsewhere, not
    one of two, and not where the status's own link resolves."""
    status = "## Status\n\nSuperseded by [ADR 32](/adr/32)\n"  # a site link, not a file
    write(vault, "adr/2022-03-28_017-udp.md", f"# 17\n\n{status}")
    write(vault, "adr/2025-02-12_032-etcd.md", "# 32. Etcd\n")
    write(vault, "other/0017-elsewhere.md", "# Elsewhere\n")
    write(vault, "adr/0009-old.md", "# Nine\n\nSuperseded by [ADR 17](0010-new.md)\n")
    write(vault, "adr/0010-new.md", "# Ten\n")
    write(vault, "adr/0011-older.md", "# Eleven\n\nSuperseded by ADR-40.\n")
    write(vault, "adr/0040-a.md", "# Forty A\n")
    write(vault, "adr/0040-b.md", "# Forty B\n")  # two records numbered 40: neither is meant
    write(vault, "other/0012.md", "# Twelve\n\nSuperseded by ADR 17.\n")  # its folder has one
    engine.workspaces.workspace_add("v", str(vault))
    engine.workspaces.workspace_configure("v", {"embedding": "none"})
    engine.indexing.index_run("v")
    assert _pairs(engine) == [
        ("adr/0009-old.md", "adr/0010-new.md"),  # the link, not record 17
        ("adr/2022-03-28_017-udp.md", "adr/2025-02-12_032-etcd.md"),
        ("other/0012.md", "other/0017-elsewhere.md"),
    ]
    # a guess is not a link its author wrote: `check` and the link counts leave it out
    report = engine.indexing.index_check("v")
    broken = [f for f in report["findings"] if f["kind"] == "link"]
    assert [(f["path"], f["line"]) for f in broken] == [("adr/2022-03-28_017-udp.md", 5)]
    assert engine.indexing.index_status("v")["links"] == {"total": 2, "resolved": 1}
    (vault / "adr" / "0040-b.md").unlink()  # one record 40 left: a targeted run finds it
    engine.indexing.index_paths("v", ["adr/0040-b.md"])
    assert ("adr/0011-older.md", "adr/0040-a.md") in _pairs(engine)


@pytest.mark.parametrize(
    ("value", "target"),
    [
        ("0042-use-postgres", "0042-use-postgres"),
        ("[[0042-use-postgres]]", "0042-use-postgres"),
        ("[[0042-use-postgres#Decision|the new one]]", "0042-use-postgres"),
        ("[ADR 42](0042-use-postgres.md#decision)", "0042-use-postgres.md"),
        ("[ADR 42](../adr/0042%20new.md)", "../adr/0042 new.md"),
        ("  ADR-0042 ", "ADR-0042"),
    ],
)
def test_a_frontmatter_reference_written_as_a_link_names_its_target(value, target):
    from autodoc.parse.document import meta_target

    assert meta_target(value) == target


def test_frontmatter_links_resolve_like_body_links_and_check_is_quiet(engine, vault):
    """`superseded_by: "[[0042-use-postgres]]"` (issue 23) and a Markdown link or a relative
    path in frontmatter resolve to their documents; none is reported as unresolved."""
    write(vault, "adr/0042-use-postgres.md", "# 42. Postgres\n")
    write(vault, "adr/0043-use-sqlite.md", "# 43. SQLite\n")
    write(vault, "adr/0050-use-lmdb.md", "# 50. LMDB\n")
    write(vault, "adr/0001-old.md", '---\nsuperseded_by: "[[0042-use-postgres]]"\n---\n# 1\n')
    write(
        vault, "adr/0002-old.md", '---\nsuperseded_by: "[ADR 43](0043-use-sqlite.md)"\n---\n# 2\n'
    )
    write(vault, "notes/0003-old.md", "---\nsuperseded_by: ../adr/0050-use-lmdb.md\n---\n# 3\n")
    # From the root, as the sample vault writes it: no adr/adr/ beside the file, so the root's
    write(vault, "adr/0004-old.md", "---\nsuperseded_by: adr/0043-use-sqlite.md\n---\n# 4\n")
    engine.workspaces.workspace_add("v", str(vault))
    engine.workspaces.workspace_configure("v", {"embedding": "none"})
    engine.indexing.index_run("v")
    assert _pairs(engine) == [
        ("adr/0001-old.md", "adr/0042-use-postgres.md"),
        ("adr/0002-old.md", "adr/0043-use-sqlite.md"),
        ("adr/0004-old.md", "adr/0043-use-sqlite.md"),
        ("notes/0003-old.md", "adr/0050-use-lmdb.md"),
    ]
    report = engine.indexing.index_check("v")
    assert [f for f in report["findings"] if f["kind"] == "link"] == []


def test_any_frontmatter_value_written_as_a_link_and_link_typed_fields_are_links(engine, vault):
    """Issue 23: frontmatter values written as wiki or relative links resolve like body links
    in any field, and a schema's `link` fields take plain names and paths too; check reports
    the ones that lead nowhere at their own line, and filters match the target."""
    write(vault, "_schema/frontmatter.yaml", "common:\n  related: link\n  owner: string\n")
    write(vault, "adr/0042-use-postgres.md", "# 42. Postgres\n")
    write(vault, "adr/0043-use-sqlite.md", "# 43. SQLite\n")
    write(vault, "notes/a.md", "---\nsee: \"[[0042-use-postgres]]\"\nrelated:\n"
          "  - 0043-use-sqlite\n  - ../adr/0042-use-postgres.md\n  - no-such-note\n"
          "owner: Ana\nsite: \"[home](https://example.org/x.md)\"\n---\n# A\n\nbody\n")  # fmt: skip
    write(vault, "notes/b.md", "---\ndepends: \"[B](../adr/0099-gone.md)\"\nowner: \"[[Bo]]\"\n"
          "---\n# B\n")  # fmt: skip
    engine.workspaces.workspace_add("v", str(vault))
    engine.workspaces.workspace_configure("v", {"embedding": "none"})
    engine.indexing.index_run("v")
    assert links(engine, "meta")[0] == [
        ("notes/a.md", "../adr/0042-use-postgres.md", "adr/0042-use-postgres.md"),
        ("notes/a.md", "0042-use-postgres", "adr/0042-use-postgres.md"),
        ("notes/a.md", "0043-use-sqlite", "adr/0043-use-sqlite.md"),
        ("notes/a.md", "no-such-note", None),
        ("notes/b.md", "../adr/0099-gone.md", None),
        ("notes/b.md", "Bo", None),  # a string field, but written as a link: a link
    ]  # the web address in `site` is not a document link
    report = engine.indexing.index_check("v")
    said = {(f["path"], f["line"]): f["message"] for f in report["findings"] if f["kind"] == "link"}
    assert said == {
        ("notes/a.md", 6): "link to 'no-such-note' does not resolve",
        ("notes/b.md", 2): "link to '../adr/0099-gone.md' does not resolve",
        ("notes/b.md", 3): "link to 'Bo' does not resolve",
    }
    found = engine.reading.search("v", "related:0043-use-sqlite", {"stages": ["lexical"]})
    assert [h["path"] for h in found["hits"]] == ["notes/a.md"]
    found = engine.reading.search("v", "related:[[0043-use-sqlite]]", {"stages": ["lexical"]})
    assert [h["path"] for h in found["hits"]] == ["notes/a.md"]  # the target, however written
    # A list of mappings is not a link: check says so.
    write(vault, "notes/c.md", "---\nrelated:\n  - {a: 1}\n---\n# C\n")
    engine.indexing.index_run("v")
    report = engine.indexing.index_check("v")
    assert any(f["path"] == "notes/c.md" and f["kind"] == "type" and "expected a link" in
               f["message"] for f in report["findings"])  # fmt: skip
