"""Renaming through the dispatcher (`links.prepare_rename`, `links.rename`,
`links.file_renamed`), as every front end calls it, over a real store: the edits, applied as an
editor would (tests/rename_apply.py), leave every link leading where it led, as a new index run
reads them; a rename that would break a link is refused with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from autodoc.wire import protocol, rename_answers
from autodoc.wire.errors import INVALID_PARAMS, RpcError

from ..conftest import lexical_workspace, write
from ..rename_apply import apply

A = """\
# Alpha

See [[b]] and [the part](../b.md#second-part) and [[b#Second part|the part]].
😀 [[b#Second part]] here, [[b]] again, `[[b]]` in code, and [[Bee]] by its title.

```
[[b]] in a fence
```

## Local heading

[[nowhere]] leads nowhere.
"""
B = """\
---
title: Bee
aliases: [Honey maker]
---
# Bee

Intro. See [[#Second part]], [below](#second-part) and [c](c.md).

## Second part

Part text.
"""
C = """\
# C

Links to [[b.md]], by alias [[Honey maker]], [b](b) and [b](<b.md#Second part>).
And to [[sub/d]] by its path.
"""
D = """\
---
superseded_by: ../b.md
related: "[[b]]"
---
# D

[up](../b.md) and [[b#second-part]].
"""
E = "# Gamma\n\nA note called Gamma; [[gamma]] links here by its title.\n"
LINKS_TO_B = 14  # a: 6 (one by title), c: 4 (one by alias), sub/d: 4 (two in the front matter)


@pytest.fixture
def ws(rpc, vault):
    write(vault, "notes/a.md", A)
    write(vault, "b.md", B)
    write(vault, "c.md", C)
    write(vault, "sub/d.md", D)
    write(vault, "e.md", E)
    lexical_workspace(rpc, vault)
    return rpc


def rename(rpc, path, line, character, new_name, opts=None) -> dict:
    answer = rpc.call("links.rename", ["v", path, line, character, new_name, opts])
    protocol.conform(answer, rename_answers.RenameAnswer)
    return answer


def refused(rpc, method, *params) -> str:
    with pytest.raises(RpcError) as err:
        rpc.call(method, ["v", *params])
    assert err.value.code == INVALID_PARAMS
    return err.value.message


def col(vault: Path, rel: str, line: int, text: str) -> int:
    return (vault / rel).read_text().splitlines()[line - 1].index(text)


def links_into(rpc, rel: str) -> list[tuple[str, int, str]]:
    from autodoc import store as sql

    with rpc.engine.store.snapshot() as conn:
        ws = rpc.engine.workspace("v")
        doc_id = sql.live_document_id(conn, ws.id, rel)
        return sql.links_into(conn, doc_id) if doc_id is not None else []


def unresolved(rpc) -> list[str]:
    report = rpc.call("index.check", ["v"])
    return sorted(f"{f['path']}:{f['line']}" for f in report["findings"] if f["kind"] == "link")


def test_a_note_renamed_from_a_link_rewrites_every_link_in_its_own_form(ws, vault: Path):
    at = col(vault, "notes/a.md", 3, "[[b]]") + 2
    target = ws.call("links.prepare_rename", ["v", "notes/a.md", 3, at])
    protocol.conform(target, rename_answers.RenameTarget)
    assert (target["kind"], target["placeholder"], target["note"]) == ("file", "b", "b.md")
    assert (target["start"], target["end"]) == (at, at + 1)  # the stem inside `[[b]]`
    before = links_into(ws, "b.md")
    assert len(before) == LINKS_TO_B
    answer = rename(ws, "notes/a.md", 3, at, "bee-notes")
    assert (answer["new_path"], answer["links"], answer["kept"]) == ("bee-notes.md", 12, 2)
    assert answer["links"] + answer["kept"] == len(before)
    assert answer["files"] == 4  # a, c, d edited; b renamed
    apply(vault, answer)
    assert (vault / "notes/a.md").read_text().splitlines()[2:4] == [
        "See [[bee-notes]] and [the part](../bee-notes.md#second-part) and"
        " [[bee-notes#Second part|the part]].",
        "😀 [[bee-notes#Second part]] here, [[bee-notes]] again, `[[b]]` in code, and [[Bee]]"
        " by its title.",
    ]
    assert "[[b]] in a fence" in (vault / "notes/a.md").read_text()  # code is not a link
    assert (vault / "c.md").read_text().splitlines()[2] == (
        "Links to [[bee-notes.md]], by alias [[Honey maker]], [b](bee-notes) and"
        " [b](<bee-notes.md#Second part>)."
    )
    assert (vault / "sub/d.md").read_text().splitlines()[1:3] == [
        "superseded_by: ../bee-notes.md",
        'related: "[[bee-notes]]"',
    ]
    assert not (vault / "b.md").exists() and (vault / "bee-notes.md").exists()
    assert unresolved(ws) == ["notes/a.md:12"]  # only the link that led nowhere before
    assert len(links_into(ws, "bee-notes.md")) == len(before)


def test_a_heading_renamed_rewrites_the_links_to_it_words_for_words_slug_for_slug(ws, vault):
    target = ws.call("links.prepare_rename", ["v", "b.md", 9, 5])
    assert (target["kind"], target["placeholder"], target["start"]) == ("heading", "Second part", 3)
    before = [x for x in links_into(ws, "b.md") if x[2].lower().startswith("second")]
    answer = rename(ws, "b.md", 9, 5, "Second half")
    assert (answer["links"], answer["local"], answer["new_path"]) == (len(before), 2, None)
    assert answer["links"] + answer["kept"] == LINKS_TO_B
    apply(vault, answer)
    a = (vault / "notes/a.md").read_text().splitlines()
    assert a[2] == ("See [[b]] and [the part](../b.md#second-half) and"
                    " [[b#Second half|the part]].")  # fmt: skip
    assert a[3].startswith("😀 [[b#Second half]] here")
    b = (vault / "b.md").read_text().splitlines()
    assert b[6] == "Intro. See [[#Second half]], [below](#second-half) and [c](c.md)."
    assert b[8] == "## Second half"
    assert "[b](<b.md#Second half>)" in (vault / "c.md").read_text()
    assert "[[b#second-half]]" in (vault / "sub/d.md").read_text()  # a slug stays a slug
    assert unresolved(ws) == ["notes/a.md:12"]
    after = [x for x in links_into(ws, "b.md") if x[2].lower().startswith("second")]
    assert len(after) == len(before)
    for path, line, _ in after:  # each leads to the renamed heading
        got = ws.call("links.references", ["v", path, line, 0])
        assert got is not None


def test_the_title_renames_in_the_front_matter_and_the_heading_and_title_links(ws, vault):
    target = ws.call("links.prepare_rename", ["v", "b.md", 2, 8])
    assert (target["kind"], target["placeholder"]) == ("title", "Bee")
    answer = rename(ws, "b.md", 2, 8, "Busy: Bee")
    assert (answer["links"], answer["new_path"]) == (1, None)  # the file is not named after it
    apply(vault, answer)
    b = (vault / "b.md").read_text().splitlines()
    assert (b[1], b[4]) == ('title: "Busy: Bee"', "# Busy: Bee")  # quoted: YAML would misread
    assert "[[Busy: Bee]] by its title" in (vault / "notes/a.md").read_text()
    assert unresolved(ws) == ["notes/a.md:12"]
    assert len(links_into(ws, "b.md")) == LINKS_TO_B


def test_a_file_named_after_its_title_follows_the_title(rpc, vault: Path):
    write(vault, "Meeting notes.md", "# Meeting notes\n\nText.\n")
    write(vault, "x.md", "See [[Meeting notes]] and [m](Meeting%20notes.md).\n")
    lexical_workspace(rpc, vault)
    answer = rename(rpc, "Meeting notes.md", 1, 3, "Team meetings")
    assert (answer["kind"], answer["new_path"], answer["links"]) == ("title", "Team meetings.md", 2)
    apply(vault, answer)
    assert (vault / "x.md").read_text() == "See [[Team meetings]] and [m](Team%20meetings.md).\n"
    assert (vault / "Team meetings.md").read_text().startswith("# Team meetings\n")
    assert unresolved(rpc) == []
    # a client that cannot rename files renames the title only; the links name the file
    answer = rename(rpc, "Team meetings.md", 1, 3, "Meetings", {"files": False})
    assert (answer["new_path"], answer["links"], answer["kept"]) == (None, 0, 2)
    assert [e["new_text"] for e in answer["edits"]] == ["Meetings"]


def test_a_moved_file_keeps_its_links_and_its_own_relative_links(ws, vault: Path):
    answer = ws.call("links.file_renamed", ["v", "b.md", "archive/b.md"])
    protocol.conform(answer, rename_answers.RenameAnswer)
    assert (answer["new_path"], answer["outgoing"], answer["left"]) == ("archive/b.md", 1, [])
    assert answer["links"] + answer["kept"] == LINKS_TO_B
    apply(ws and vault, answer)
    assert "[c](../c.md)" in (vault / "archive/b.md").read_text()
    c = (vault / "c.md").read_text()
    assert "[[b.md]]" in c and "[b](archive/b)" in c  # by stem: the same; by path: the new one
    assert "[[b]]" in (vault / "notes/a.md").read_text()
    assert "superseded_by: ../archive/b.md" in (vault / "sub/d.md").read_text()
    assert unresolved(ws) == ["notes/a.md:12"]
    assert len(links_into(ws, "archive/b.md")) == LINKS_TO_B
    answer = ws.call("links.file_renamed", ["v", "sub/d.md", "d.md"])  # one folder up
    assert answer["outgoing"] == 2  # `superseded_by: ../archive/b.md`, `[up](../archive/b.md)`
    apply(vault, answer)
    assert "And to [[d]] by its path." in (vault / "c.md").read_text()
    assert (vault / "d.md").read_text().splitlines()[1] == "superseded_by: archive/b.md"
    assert unresolved(ws) == ["notes/a.md:12"]
    # a file the index does not hold: nothing to do
    assert ws.call("links.file_renamed", ["v", "none.md", "other.md"])["edits"] == []


def test_columns_are_in_the_clients_units_and_its_unsaved_text_is_used(ws, vault: Path):
    """Line 4 of a.md starts with an emoji: 1 character, 2 UTF-16 units, 4 UTF-8 bytes."""
    at = col(vault, "notes/a.md", 4, "[[b]] again") + 2
    for units, shift in (("utf-32", 0), ("utf-16", 1), ("utf-8", 3)):
        answer = rename(ws, "notes/a.md", 4, at + shift, "bee", {"units": units})
        edits = [e for e in answer["edits"] if e["path"] == "notes/a.md" and e["line"] == 4]
        first = col(vault, "notes/a.md", 4, "[[b#") + 2  # `[[b#Second part]]`, then `[[b]]`
        assert [(e["start"], e["end"], e["new_text"]) for e in edits] == [
            (first + shift, first + shift + 1, "bee"), (at + shift, at + shift + 1, "bee")
        ], units  # fmt: skip
    # An unsaved line above moves the links: the edits are on the client's text.
    text = "New first line with [[b]].\n" + (vault / "notes/a.md").read_text()
    answer = rename(ws, "notes/a.md", 1, 22, "bee", {"open": {"notes/a.md": text}})
    lines = sorted(e["line"] for e in answer["edits"] if e["path"] == "notes/a.md")
    assert lines == [1, 4, 4, 4, 5, 5]  # the new link, then the old ones one line down


def test_on_a_link_the_part_under_the_cursor_says_what_is_renamed(ws, vault: Path):
    """`[[b#Second part|the part]]`: on `b` the note, elsewhere the heading it names."""
    at = col(vault, "notes/a.md", 3, "[[b#Second part|")
    kinds = {
        where: ws.call("links.prepare_rename", ["v", "notes/a.md", 3, at + where])["kind"]
        for where in (0, 2, 3, 5, 17, 23)  # `[`, `b`, `#`, `Second`, `|`, `part` of the alias
    }
    assert kinds == {0: "heading", 2: "file", 3: "file", 5: "heading", 17: "heading",
                     23: "heading"}  # fmt: skip
    md = col(vault, "notes/a.md", 3, "../b.md#second-part")
    got = ws.call("links.prepare_rename", ["v", "notes/a.md", 3, md + 4])
    assert (got["kind"], got["placeholder"], got["end"] - got["start"]) == ("file", "b", 1)
    got = ws.call("links.prepare_rename", ["v", "notes/a.md", 3, md + 10])
    assert (got["kind"], got["placeholder"]) == ("heading", "Second part")


def test_refusals_say_why(ws, vault: Path):
    at = col(vault, "notes/a.md", 3, "[[b]]") + 2
    assert "empty" in refused(ws, "links.rename", "notes/a.md", 3, at, "  ")
    assert "exists already" in refused(ws, "links.rename", "notes/a.md", 3, at, "c")
    assert "cannot be part of a link" in refused(ws, "links.rename", "notes/a.md", 3, at, "x|y")
    assert "keeps the note in its folder" in refused(ws, "links.rename", "notes/a.md", 3, at,
                                                     "sub/b")  # fmt: skip
    # a new stem that e.md's title answers to now: `[[gamma]]` would change notes
    message = refused(ws, "links.rename", "notes/a.md", 3, at, "gamma")
    assert "e.md:3: 'gamma' leads to e.md now" in message
    # a heading whose anchor another heading of the note has
    assert "has a heading 'Bee' already" in refused(ws, "links.rename", "b.md", 9, 5, "BEE")
    message = refused(ws, "links.rename", "notes/a.md", 3, at, "bee", {"files": False})
    assert "resourceOperations" in message
    message = refused(ws, "links.prepare_rename", "notes/a.md", 3, at, {"files": False})
    assert "resourceOperations" in message
    where = col(vault, "notes/a.md", 12, "[[nowhere]]") + 2
    assert "leads to no note" in refused(ws, "links.prepare_rename", "notes/a.md", 12, where)
    assert "nothing to rename here" in refused(ws, "links.prepare_rename", "notes/a.md", 3, 1)
    alias = col(vault, "c.md", 3, "[[Honey") + 3
    assert "another of its names" in refused(ws, "links.prepare_rename", "c.md", 3, alias)
    assert "code" in refused(ws, "links.prepare_rename", "notes/a.md", 7, 2)
    escape = {"open": {"../outside.md": "# Out\n\n[[b]]\n"}}
    assert "not a path under the root" in refused(ws, "links.rename", "notes/a.md", 3, at, "x",
                                                  escape)  # fmt: skip


def test_a_heading_that_repeats_an_earlier_one_renames_without_taking_its_links(rpc, vault):
    """Links find the first heading with their words: renaming the second `## Notes` leaves
    `[[b#Notes]]` leading to the first, as written."""
    write(vault, "b.md", "# B\n\n## Notes\n\nfirst\n\n## Notes\n\nsecond\n")
    write(vault, "a.md", "[[b#Notes]] and [n](b.md#notes).\n")
    lexical_workspace(rpc, vault)
    answer = rename(rpc, "b.md", 7, 4, "Later notes")
    assert (answer["links"], answer["kept"]) == (0, 2)
    apply(vault, answer)
    assert (vault / "a.md").read_text() == "[[b#Notes]] and [n](b.md#notes).\n"
    assert (vault / "b.md").read_text().splitlines()[6] == "## Later notes"
    rpc.call("index.run", ["v"])
    answer = rename(rpc, "b.md", 3, 4, "Earlier notes")  # the first: its links follow it
    assert (answer["links"], answer["kept"]) == (2, 0)


def test_a_new_file_name_the_rules_leave_out_is_refused(rpc, vault):
    write(vault, ".gitignore", "*.draft.md\n")
    write(vault, "b.md", "# B\n")
    write(vault, "a.md", "[[b]]\n")
    lexical_workspace(rpc, vault)
    message = refused(rpc, "links.rename", "a.md", 1, 2, "b.draft")
    assert "b.draft.md would be left out of the index by '*.draft.md' (.gitignore)" in message
    rpc.call("workspace.configure", ["v", {"exclude": ["old-*.md"]}])
    assert "by 'old-*.md' (exclude)" in refused(rpc, "links.rename", "a.md", 1, 2, "old-b")
    assert rename(rpc, "a.md", 1, 2, "bee")["new_path"] == "bee.md"


def test_each_form_of_a_link_survives_a_move_and_a_name_two_notes_would_share_is_refused(
    rpc, vault
):
    """A wiki link by path gets the new path, `./` stays, `<…>` keeps its brackets; a new
    stem that another folder's note has would make `[[stem]]` name two notes: refused."""
    write(vault, "sub/d.md", "# D\n")
    write(vault, "x/e.md", "# E\n")
    write(vault, "a.md", "[[sub/d]] [d](./sub/d.md) [d](<sub/d.md>) [[d]]\n")
    write(vault, "sub/c.md", "[d](./d.md#top)\n")
    lexical_workspace(rpc, vault)
    answer = rpc.call("links.file_renamed", ["v", "sub/d.md", "other/d.md"])
    apply(vault, answer)
    assert (vault / "a.md").read_text() == (
        "[[other/d]] [d](./other/d.md) [d](<other/d.md>) [[d]]\n"
    )
    assert (vault / "sub/c.md").read_text() == "[d](../other/d.md#top)\n"
    rpc.call("index.run", ["v"])
    assert unresolved(rpc) == []
    message = refused(rpc, "links.rename", "a.md", 1, 2, "e")
    assert "[[x/e]]" not in message and "would lead to another note" in message
