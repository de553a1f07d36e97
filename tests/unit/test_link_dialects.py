"""Links read in the vault's own dialect (links/dialect.py, links/vault_markers.py): Dendron's
`[[label|target]]`, `dendron://vault/note` and hierarchy names; Obsidian's shortest paths,
`#^block` and names only by file; plain Markdown's lenient reading; the dialect decided by the
option, the vault's marker files, else its links; every feature that reads a link (the index,
diagnostics, definition, references, lenses, completion, rename, code actions, check)
reading it the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

from autodoc.links.dialect import Dialect
from autodoc.links.vault_markers import decide, from_links, from_markers
from autodoc.parse.document import wiki_parts

from ..conftest import lexical_workspace, write

DENDRON_YML = """\
version: 5
workspace:
    vaults:
        -
            fsPath: notes
            name: team.notes
"""


def col(text: str, needle: str) -> int:
    return text.index(needle)


def dialect(rpc, name: str = "v") -> dict:
    with rpc.engine.store.snapshot() as conn:
        row = conn.execute("SELECT link_dialect FROM workspaces WHERE name = ?", (name,))
        return Dialect.from_json(row.fetchone()[0]).__dict__


def findings(rpc, name: str = "v") -> list[tuple[str, int, str, str]]:
    report = rpc.call("index.check", [name])
    return [
        (f["path"], f["line"], f["kind"], f["cause"])
        for f in report["findings"]
        if f["kind"] in ("link", "heading")
    ]


# -- Dendron ----------------------------------------------------------------------------------

LOOKUP = "---\ntitle: Lookup\n---\n\n## Details\n\nHow lookup works.\n\nA block ^quick\n"
RELEASE = (
    "# Release\n\n"
    "Read [[here|dendron.topic.lookup]] and [[Lookup details|dendron.topic.lookup#details]].\n"
    "Also [[dendron://team.notes/dendron.topic.lookup]] and [[dendron.topic.lookup#^quick]].\n"
    "Then [[Retention rules|dendron.policy.retention]] and [[x|dendron://other.vault/a.b]].\n"
    "And [[Lookup]] is no note: Dendron names a note by its hierarchy.\n"
)


@pytest.fixture
def dendron(rpc, tmp_path: Path):
    root = tmp_path / "site"
    write(root, "dendron.yml", DENDRON_YML)
    write(root, "notes/dendron.topic.lookup.md", LOOKUP)
    write(root, "notes/dendron.topic.lookup.modifiers.md", "# Modifiers\n")
    write(root, "notes/changelog.md", RELEASE)
    lexical_workspace(rpc, root)
    return rpc, root


def test_dendron_reads_the_label_before_the_target_and_its_vaults(dendron):
    rpc, _ = dendron
    got = dialect(rpc)
    assert got["name"] == "dendron" and got["source"] == "dendron.yml"
    assert got["vaults"] == (("notes", "team.notes"),)
    assert findings(rpc) == [
        ("notes/changelog.md", 5, "link", "note"),  # dendron.policy.retention: not written yet
        ("notes/changelog.md", 5, "link", "outside"),  # another workspace's vault
        ("notes/changelog.md", 6, "link", "note"),  # [[Lookup]]: a title is no note name
    ]
    line = RELEASE.split("\n")[2]
    for needle in ("here|", "Lookup details"):  # on the label or on the target: the note
        got = rpc.call("links.definition", ["v", "notes/changelog.md", 3, col(line, needle)])
        assert got["target"]["path"] == "notes/dendron.topic.lookup.md"
    details = rpc.call("links.definition", ["v", "notes/changelog.md", 3, col(line, "details]")])
    assert (details["target"]["heading"], details["target"]["line"]) == ("Details", 5)
    line = RELEASE.split("\n")[3]
    cross = rpc.call("links.definition", ["v", "notes/changelog.md", 4, col(line, "dendron://")])
    assert cross["target"]["path"] == "notes/dendron.topic.lookup.md"
    block = rpc.call("links.definition", ["v", "notes/changelog.md", 4, col(line, "#^quick")])
    assert block["target"]["line"] == 9


def test_dendron_backlinks_and_diagnostics_count_what_dendron_counts(dendron):
    rpc, _ = dendron
    lenses = rpc.call("doc.lenses", ["v", "notes/dendron.topic.lookup.md"])["lenses"]
    assert lenses[0]["links"] == 4  # every link to the note, the cross-vault one too
    diagnostics = rpc.call("links.diagnostics", ["v", "notes/changelog.md"])["findings"]
    line = RELEASE.split("\n")[4]
    spans = sorted((f["line"], f["start"]) for f in diagnostics)
    assert spans == [(5, col(line, "[[Retention")), (5, col(line, "[[x|")), (6, 4)]
    assert all("'here'" not in f["message"] for f in diagnostics)


def test_dendron_create_note_names_the_target_in_its_vault(dendron):
    rpc, _ = dendron
    line = RELEASE.split("\n")[4]
    actions = rpc.call("doc.actions", ["v", "notes/changelog.md", 5, col(line, "Retention")])
    create = [a for a in actions["actions"] if a["kind"] == "create_note"]
    assert [a["path"] for a in create] == ["notes/dendron.policy.retention.md"]
    assert "title: Retention" in create[0]["text"] and create[0]["text"].startswith("---\nid: ")


def test_dendron_rename_keeps_labels_and_vaults_and_leaves_children(dendron):
    rpc, _ = dendron
    line = RELEASE.split("\n")[2]
    at = col(line, "dendron.topic.lookup]]") + 3
    answer = rpc.call("links.rename", ["v", "notes/changelog.md", 3, at, "dendron.topic.find"])
    assert answer["new_path"] == "notes/dendron.topic.find.md"
    texts = sorted(e["new_text"] for e in answer["edits"])  # the labels stay, and the vault
    assert texts == ["dendron.topic.find"] * 3 + ["dendron://team.notes/dendron.topic.find"]
    edited = {(e["line"], e["start"]) for e in answer["edits"]}
    assert (4, col(RELEASE.split("\n")[3], "dendron://")) in edited
    assert not any(e["path"].endswith("modifiers.md") for e in answer["edits"])


def test_dendron_heading_rename_is_not_refused_by_a_label_or_a_title(dendron):
    rpc, _ = dendron
    answer = rpc.call("links.rename", ["v", "notes/dendron.topic.lookup.md", 5, 4, "Internals"])
    assert {(e["path"], e["new_text"]) for e in answer["edits"]} == {
        ("notes/dendron.topic.lookup.md", "Internals"),
        ("notes/changelog.md", "internals"),  # the slug Dendron wrote, as a slug
    }


def test_dendron_completion_names_the_note_after_the_label(dendron):
    rpc, _ = dendron
    typed = "New [[Why|dendron.topic.lo"
    text = RELEASE + typed
    got = rpc.call("links.complete", ["v", "notes/changelog.md", 7, len(typed), {"text": text}])
    assert got["context"] == "note"
    assert "dendron.topic.lookup]]" in [i["new_text"] for i in got["items"]]
    assert got["style"]["alias"] == "label-first"
    label = rpc.call("links.complete", ["v", "notes/changelog.md", 7, len("New [[Wh"),
                                        {"text": text}])  # fmt: skip
    assert label["context"] == "none"  # in the label: nothing to complete


# -- Obsidian ---------------------------------------------------------------------------------


@pytest.fixture
def obsidian(rpc, tmp_path: Path):
    root = tmp_path / "My Vault"
    write(root, ".obsidian/app.json", '{"useMarkdownLinks": false, "newLinkFormat": "shortest"}')
    write(root, "Projects/Alpha Plan.md", "---\ntitle: The Big Plan\n---\n# Goals\n\nShip ^goal1\n")
    write(root, "Archive/Projects/Beta.md", "# Beta\n")
    write(root, "Beta.md", "# Top Beta\n")
    write(root, "images/diagram.png", "png")
    write(
        root,
        "Home.md",
        "# Home\n\n[[Alpha Plan]] [[Projects/Alpha Plan#Goals|goals]] [[Alpha Plan#^goal1]]\n"
        "[[Projects/Beta]] [[Beta]] [[The Big Plan]] ![[diagram.png]] ![[gone.png]]\n"
        "[md](Alpha%20Plan.md) [[Alpha Plan#Nowhere]]\n",
    )
    lexical_workspace(rpc, root)
    return rpc, root


def test_obsidian_resolves_by_file_name_and_shortest_path_only(obsidian):
    rpc, _ = obsidian
    assert dialect(rpc)["name"] == "obsidian"
    with rpc.engine.store.snapshot() as conn:
        resolved = dict(
            conn.execute(
                "SELECT l.target || coalesce('#' || nullif(l.heading, ''), ''), t.path FROM links l"
                " LEFT JOIN documents t ON t.id = l.target_id"
            ).fetchall()
        )
    assert resolved["Alpha Plan"] == "Projects/Alpha Plan.md"
    assert resolved["Projects/Alpha Plan#Goals"] == "Projects/Alpha Plan.md"
    assert resolved["Projects/Beta"] == "Archive/Projects/Beta.md"  # the end of its path
    assert resolved["Beta"] == "Beta.md"  # a name at the root beats one deeper
    assert resolved["The Big Plan"] is None  # a title is no name a link resolves by
    assert resolved["Alpha Plan.md"] == "Projects/Alpha Plan.md"  # a Markdown link by name
    assert findings(rpc) == [
        ("Home.md", 4, "link", "note"),
        ("Home.md", 4, "link", "attachment"),
        ("Home.md", 5, "heading", "heading"),
    ]


def test_obsidian_block_and_heading_definitions_land_on_their_line(obsidian):
    rpc, _ = obsidian
    line = "[[Alpha Plan]] [[Projects/Alpha Plan#Goals|goals]] [[Alpha Plan#^goal1]]"
    goals = rpc.call("links.definition", ["v", "Home.md", 3, col(line, "goals]]")])
    assert (goals["target"]["line"], goals["target"]["heading"]) == (4, "Goals")
    block = rpc.call("links.definition", ["v", "Home.md", 3, col(line, "^goal1")])
    assert block["target"]["line"] == 6


# -- the dialect decided ----------------------------------------------------------------------


def test_a_vault_without_markers_is_read_the_way_its_links_resolve(rpc, vault):
    for n in range(6):
        write(vault, f"area.topic{n}.md", f"# Topic {n}\n")
    write(vault, "index.md", "".join(f"See [[the {n}|area.topic{n}]].\n" for n in range(6)))
    lexical_workspace(rpc, vault)
    assert (dialect(rpc)["name"], dialect(rpc)["source"]) == ("dendron", "links")
    assert findings(rpc) == []
    with rpc.engine.store.snapshot() as conn:
        chunks = conn.execute("SELECT id FROM chunks WHERE state = 1 ORDER BY id").fetchall()
    rpc.call("workspace.configure", ["v", {"links": {"dialect": "markdown"}}])
    rpc.call("index.run", ["v"])  # every note read again in the new dialect
    assert (dialect(rpc)["name"], dialect(rpc)["source"]) == ("markdown", "option")
    assert len(findings(rpc)) == 6  # `[[the 0|…]]` names no note read target first
    with rpc.engine.store.snapshot() as conn:  # the same chunks: nothing to embed again
        assert conn.execute("SELECT id FROM chunks WHERE state = 1 ORDER BY id").fetchall() == (
            chunks
        )


def test_the_option_must_name_a_dialect(rpc, vault):
    rpc.call("workspace.add", ["v", str(vault)])
    with pytest.raises(Exception, match=r"links\.dialect is one of"):
        rpc.call("workspace.configure", ["v", {"links": {"dialect": "roam"}}])


def test_markers_decide_before_links_and_the_option_before_markers(tmp_path: Path):
    write(tmp_path, ".dendron.yml", "vaults:\n  - fsPath: .\n")
    found = from_markers(tmp_path)
    assert found is not None and (found.name, found.vaults) == ("dendron", ((".", "."),))
    assert decide(tmp_path, "obsidian", Dialect()).name == "obsidian"
    write(tmp_path, "out/.obsidian/app.json", "{}")
    assert from_markers(tmp_path / "out") == Dialect("obsidian", ".obsidian/app.json")
    write(tmp_path, "big/dendron.yml", "x" * 300_000)  # too large to be a marker: ignored
    assert from_markers(tmp_path / "big") is None


@pytest.mark.parametrize(
    "inner,label_first,parts",
    [
        ("a#h|label", False, ("a", "h", "label")),
        ("label|a.b#h", True, ("a.b", "h", "label")),
        ("a\\|label", False, ("a", "", "label")),  # a table row's escaped bar
        ("a|b|c", True, ("c", "", "a|b")),
        ("#Local", False, ("", "Local", "")),
        (" spaced note |  shown ", False, ("spaced note", "", "shown")),
    ],
)
def test_wiki_parts_read_either_order(inner, label_first, parts):
    got = wiki_parts(inner, label_first)
    assert (got.text(got.target), got.text(got.heading), got.text(got.label)) == parts


def test_a_note_not_named_after_its_title_renames_its_file_from_inside(dendron):
    rpc, _ = dendron
    opts = {"subject": "file"}
    target = rpc.call("links.prepare_rename", ["v", "notes/dendron.topic.lookup.md", 6, 0, opts])
    assert (target["kind"], target["placeholder"]) == ("file", "dendron.topic.lookup")
    answer = rpc.call(
        "links.rename", ["v", "notes/dendron.topic.lookup.md", 6, 0, "dendron.topic.search", opts]
    )
    assert answer["new_path"] == "notes/dendron.topic.search.md"
    assert answer["links"] == 4
    with pytest.raises(Exception, match="subject must be"):
        rpc.call("links.prepare_rename", ["v", "notes/changelog.md", 1, 0, {"subject": "title"}])


# -- the dialect's own rules, one by one -------------------------------------------------------

PATH, STEM, SUFFIX, TITLE = 1 << 0, 1 << 1, 1 << 6, 1 << 2
DENDRON = Dialect("dendron", "dendron.yml", (("notes", "team.notes"), ("more/vault", "More")))
OBSIDIAN = Dialect("obsidian", ".obsidian/app.json")


def _files(*present: str):
    return lambda rel: rel in present


@pytest.mark.parametrize(
    ("dialect", "source", "kind", "target", "is_file", "key", "reach"),
    [
        # Dendron: a hierarchy name; a vault it holds keeps its name; one it does not, too
        (DENDRON, "notes/a.md", "wiki", "Dendron.Topic", None, "dendron.topic", PATH | STEM),
        (
            DENDRON,
            "notes/a.md",
            "wiki",
            "dendron://Team.Notes/a.B",
            None,
            "dendron://team.notes/a.b",
            PATH | STEM,
        ),
        (
            DENDRON,
            "notes/a.md",
            "wiki",
            "dendron://other/a.b",
            None,
            "dendron://other/a.b",
            PATH | STEM,
        ),
        (
            Dialect("dendron", "links"),
            "a.md",
            "wiki",
            "dendron://any/a.b",
            None,
            "a.b",
            PATH | STEM,
        ),  # no vaults known: the name alone
        # Obsidian: a path's end, the root (`/`), relative to the note; a Markdown link by name
        (OBSIDIAN, "x/a.md", "wiki", "Folder/Note.md", None, "folder/note", PATH | SUFFIX | STEM),
        (OBSIDIAN, "x/a.md", "wiki", "/Top/Note", None, "top/note", PATH),
        (OBSIDIAN, "x/a.md", "wiki", "../y/Note", None, "y/note", PATH),
        (OBSIDIAN, "x/a.md", "md", "Note.md", _files(), "note", PATH | SUFFIX | STEM),
        (OBSIDIAN, "x/a.md", "md", "Note.md", _files("x/Note.md"), "x/note", PATH),
        (OBSIDIAN, "x/a.md", "md", "./Note.md", _files(), "x/note", PATH),
        (OBSIDIAN, "x/a.md", "md", "Note", _files("x/Note.md"), "x/note", PATH),
        # plain Markdown: a wiki link by any name but a path's end; a Markdown link by its path
        (Dialect(), "x/a.md", "wiki", "Some Title", None, "some title", -1 & ~SUFFIX),
        (Dialect(), "x/a.md", "md", "../b.md", None, "b", PATH),
        (Dialect(), "x/a.md", "meta", "b.md", None, "x/b", PATH),
        (Dialect(), "x/a.md", "meta", "Bee", None, "bee", -1 & ~SUFFIX),
        (Dialect(), "adr/a.md", "record", "32", None, "adr/#32", -1),
    ],
)
def test_a_link_key_and_the_names_it_may_find(dialect, source, kind, target, is_file, key, reach):
    assert dialect.key(source, kind, target, is_file) == (key, reach)


def test_the_names_a_note_answers_to_in_each_dialect():
    plain = set(Dialect().names("a/b/c.md", "Title", ["Alias"]))
    assert {("a/b/c", 0), ("c", 1), ("title", 2), ("alias", 3)} <= plain
    assert set(OBSIDIAN.names("a/b/c.md", "Title", [])) - plain == {("b/c", 6)}
    in_vault = set(DENDRON.names("more/vault/x.y.md", "Y", []))
    assert in_vault - set(Dialect().names("more/vault/x.y.md", "Y", [])) == {
        ("dendron://more/x.y", 0)
    }
    assert set(DENDRON.names("elsewhere/x.md", "X", [])) == set(Dialect().names(
        "elsewhere/x.md", "X", []))  # fmt: skip
    assert DENDRON.vault_of("more/vault/x.md") == ("more/vault", "More")
    assert DENDRON.vault_of("notes/x.md") == ("notes", "team.notes")
    assert DENDRON.vault_of("morex/x.md") is None
    assert Dialect("dendron", "x", ((".", "root"),)).vault_of("any/x.md") == (".", "root")
    assert DENDRON.vault_named("dendron://more/x") == ("more/vault", "More")
    assert DENDRON.vault_named("dendron://nowhere/x") is None and DENDRON.vault_named("x") is None
    assert DENDRON.note_name("dendron://More/a.b") == "a.b" and DENDRON.note_name("a.b") == "a.b"
    assert OBSIDIAN.note_name("dendron://x/y") == "dendron://x/y"
    assert Dialect.from_json(DENDRON.to_json()) == DENDRON and Dialect.from_json("") == Dialect()
    assert DENDRON.fingerprint == "dialect=dendron[notes=team.notes;more/vault=More]"
    assert OBSIDIAN.fingerprint == "dialect=obsidian" and not OBSIDIAN.label_first


def test_obsidian_settings_and_dendron_vaults_read_from_their_files(tmp_path: Path):
    write(tmp_path, "o/.obsidian/app.json",
          '{"useMarkdownLinks": true, "newLinkFormat": "relative"}')  # fmt: skip
    assert from_markers(tmp_path / "o") == Dialect("obsidian", ".obsidian/app.json", (), True,
                                                   "relative")  # fmt: skip
    write(tmp_path, "p/.obsidian/app.json", '{"useMarkdownLinks": 1, "newLinkFormat": "odd"}')
    assert from_markers(tmp_path / "p") == Dialect("obsidian", ".obsidian/app.json")
    write(tmp_path, "q/.obsidian/app.json", "[not an object]")
    assert from_markers(tmp_path / "q") == Dialect("obsidian", ".obsidian/app.json")
    (tmp_path / "r" / ".obsidian").mkdir(parents=True)  # a vault Obsidian opened, no settings
    assert from_markers(tmp_path / "r") == Dialect("obsidian", ".obsidian")
    write(tmp_path, "d/dendron.yml", "workspace:\n  vaults:\n    - fsPath: ./notes/\n"
          "    - fsPath: ../outside\n    - {fsPath: 'sub\\\\v', name: ''}\n    - 7\n")  # fmt: skip
    vaults = (("notes", "notes"), ("sub/v", "v"))
    assert from_markers(tmp_path / "d") == Dialect("dendron", "dendron.yml", vaults)
    write(tmp_path, "e/dendron.yml", ": not yaml : [")
    assert from_markers(tmp_path / "e") == Dialect("dendron", "dendron.yml")
    write(tmp_path, "f/.dendron.yml", "- a list\n")
    assert from_markers(tmp_path / "f") == Dialect("dendron", ".dendron.yml")
    assert from_markers(tmp_path / "none") is None


def test_the_dialect_decided_by_the_option_then_the_markers_then_what_links_said(tmp_path: Path):
    write(tmp_path, "dendron.yml", DENDRON_YML)
    learned = Dialect("dendron", "links")
    assert decide(tmp_path, "auto", Dialect()) == Dialect("dendron", "dendron.yml",
                                                          (("notes", "team.notes"),))  # fmt: skip
    forced = decide(tmp_path, "dendron", Dialect())
    assert (forced.source, forced.vaults) == ("option", (("notes", "team.notes"),))
    assert decide(tmp_path, "markdown", learned) == Dialect("markdown", "option")
    bare = tmp_path / "bare"
    bare.mkdir()
    assert decide(bare, "auto", learned) == learned  # what the links said stays
    assert decide(bare, "auto", Dialect("obsidian", ".obsidian")) == Dialect()  # marker gone
    with pytest.raises(ValueError):
        decide(bare, "roam", Dialect())


@pytest.mark.parametrize(
    ("target_first", "label_first", "decided"),
    [
        (0, 5, True),
        (0, 4, False),
        (3, 8, True),
        (3, 5, False),
        (4, 9, True),
        (4, 8, False),
        (5, 9, False),
    ],
)
def test_the_links_decide_only_by_a_clear_lead(target_first, label_first, decided):
    """`[[a|b]]`: label first wins with at least 5 more links resolved, and twice as many."""
    pairs = [("n.md", f"t{i}", "nowhere") for i in range(target_first)]
    pairs += [("n.md", "nowhere", f"l{i}") for i in range(label_first)]
    known = {f"t{i}" for i in range(target_first)} | {f"l{i}" for i in range(label_first)}
    found = from_links(pairs, lambda keys: set(keys) & known, Dialect())
    assert (found == Dialect("dendron", "links")) is decided
