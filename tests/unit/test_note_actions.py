"""The writing methods through the dispatcher, as every front end calls them: `doc.actions`
(create the note a link asks for, convert a bare URL, copy a link to a section) and
`doc.lenses` (backlink counts); and the pure planning under them (`query.note_actions`)."""

from __future__ import annotations

import re
import time

import pytest

from autodoc.links.note_actions import bare_urls, url_label
from autodoc.wire import action_answers, protocol
from autodoc.wire.errors import INVALID_PARAMS, RpcError

from ..conftest import lexical_workspace, write

A = (
    "# Alpha\n\nSee [[b]] and [the part](../b.md#second-part) and [[nowhere]].\n"
    "😀 [[b#Second part]] read https://example.com/docs/page. Then [[New Idea#Why]].\n\n"
    "## Local heading\n\nText [gone](../drafts/gone.md) and [[sub/deep]] and [x](../../out.md).\n"
    "```\nhttps://in.a.code/block [[nowhere]]\n```\n"
)
B = "---\ntitle: Bee\n---\n# Bee\n\nIntro line.\n\n## Second part\n\nPart text.\n"
C = "# C\n\nLinks to [[a#Local heading]] and [[notes/a]].\n"


@pytest.fixture
def ws(rpc, vault):
    write(vault, "notes/a.md", A)
    write(vault, "b.md", B)
    write(vault, "c.md", C)
    lexical_workspace(rpc, vault)
    return rpc


def actions(rpc, line, character, opts=None, path="notes/a.md"):
    answer = rpc.call("doc.actions", ["v", path, line, character, opts])
    protocol.conform(answer, action_answers.DocumentActions)
    return answer["actions"]


def kinds(found):
    return [a["kind"] for a in found]


def test_an_unresolved_wiki_link_offers_its_note_beside_the_linking_one(ws):
    (got,) = actions(ws, 3, 55)  # inside `[[nowhere]]`
    assert got["kind"] == "create_note"
    assert (got["line"], got["start"], got["end"]) == (3, 50, 61)
    assert got["path"] == "notes/nowhere.md"
    assert got["text"] == "# nowhere\n"
    assert "nowhere" in got["title"]
    # A link that names a heading gets it in the new note.
    (why,) = actions(ws, 4, 65)  # `[[New Idea#Why]]`
    assert (why["path"], why["text"]) == ("notes/New Idea.md", "# New Idea\n\n## Why\n")


def test_a_resolved_link_offers_no_note(ws):
    assert actions(ws, 3, 5) == []  # `[[b]]`
    assert kinds(actions(ws, 4, 5)) == []  # `[[b#Second part]]`: b exists


def test_where_the_new_note_goes(ws, vault):
    """A Markdown link names its file relative to the linking note; a wiki link with a folder
    names it from the root; one that would leave the root is offered nothing."""
    (md,) = actions(ws, 8, 8)  # `[gone](../drafts/gone.md)`
    assert (md["path"], md["text"]) == ("drafts/gone.md", "# gone\n")
    (deep,) = actions(ws, 8, 40)  # `[[sub/deep]]`
    assert deep["path"] == "sub/deep.md"
    assert actions(ws, 8, 55) == []  # `[x](../../out.md)`: outside the root
    # The option puts wiki notes in the root, or in a folder.
    ws.call("workspace.configure", ["v", {"new_notes": {"folder": "/"}}])
    assert actions(ws, 3, 55)[0]["path"] == "nowhere.md"
    ws.call("workspace.configure", ["v", {"new_notes": {"folder": "inbox"}}])
    assert actions(ws, 3, 55)[0]["path"] == "inbox/nowhere.md"
    # A note that exists by the time the action is asked for is not offered again.
    write(vault, "inbox/nowhere.md", "# nowhere\n")
    assert actions(ws, 3, 55) == []


def test_a_template_fills_the_new_note(ws, vault):
    write(vault, "templates/note.md", "---\ntitle: {{title}}\ncreated: {{date}}\n---\n")
    ws.call("workspace.configure", ["v", {"new_notes": {"template": "templates/note.md"}}])
    (got,) = actions(ws, 3, 55)
    assert got["text"] == f"---\ntitle: nowhere\ncreated: {time.strftime('%Y-%m-%d')}\n---\n"
    ws.call("workspace.configure", ["v", {"new_notes": {"template": "templates/missing.md"}}])
    with pytest.raises(RpcError) as err:
        actions(ws, 3, 55)
    assert err.value.code == INVALID_PARAMS and "template" in err.value.message


@pytest.mark.parametrize(
    "bad",
    [{"folder": "../out"}, {"template": "../../etc/passwd"}, {"colour": 1}, "inbox", {"folder": 3}],
)
def test_bad_new_note_options_are_refused(ws, bad):
    with pytest.raises(RpcError) as err:
        ws.call("workspace.configure", ["v", {"new_notes": bad}])
    assert err.value.code == INVALID_PARAMS
    assert ws.call("workspace.list")[0]["options"]["new_notes"] == {"folder": ".", "template": ""}


def test_a_bare_url_becomes_a_markdown_link(ws):
    found = actions(ws, 4, 30)  # inside the URL after the emoji
    (got,) = [a for a in found if a["kind"] == "convert_url"]
    line = A.splitlines()[3]
    assert line[got["start"] : got["end"]] == "https://example.com/docs/page"  # not the '.'
    assert got["text"] == "[example.com/docs/page](https://example.com/docs/page)"
    # In UTF-16 the emoji counts two: the same URL, one column further.
    (u16,) = [a for a in actions(ws, 4, 31, {"units": "utf-16"}) if a["kind"] == "convert_url"]
    assert (u16["start"], u16["end"]) == (got["start"] + 1, got["end"] + 1)
    # A URL in a code block is code, not prose.
    assert actions(ws, 10, 5) == []


@pytest.mark.parametrize(
    ("line", "urls"),
    [
        ("see https://a.example/x, then", ["https://a.example/x"]),
        ("(https://en.wikipedia.org/wiki/Foo_(bar))", ["https://en.wikipedia.org/wiki/Foo_(bar)"]),
        ("[t](https://a.example) <https://b.example> `https://c.example`", []),
        ('<a href="https://a.example">x</a>', []),
        ("[ref]: https://a.example/ref", []),
        ("![img](https://a.example/i.png) and ftp://files.example/f", ["ftp://files.example/f"]),
        ("nothing here: https:// or http:", []),
    ],
)
def test_which_urls_are_bare(line, urls):
    assert [u for _, _, u in bare_urls(line)] == urls
    for start, end, url in bare_urls(line):
        assert line[start:end] == url


def test_a_url_label_reads_as_its_place():
    assert url_label("https://www.example.com/a/b/") == "example.com/a/b"
    assert url_label("http://x.example/[1]") == "x.example/(1)"


def test_a_heading_offers_a_link_to_its_section_in_the_vaults_style(ws):
    (got,) = actions(ws, 6, 4)  # `## Local heading`
    assert got["kind"] == "copy_link"
    assert (got["line"], got["start"], got["end"]) == (6, 3, 16)
    assert got["text"] == "[[a#Local heading]]"  # the vault writes wiki links, without .md
    (title,) = actions(ws, 1, 0)  # the title links to the note itself
    assert title["text"] == "[[a]]"
    assert actions(ws, 2, 0) == []  # a blank line


def test_lenses_count_the_links_to_a_document_and_its_headings(ws):
    def lenses(path, opts=None):
        answer = ws.call("doc.lenses", ["v", path, opts])
        protocol.conform(answer, action_answers.DocumentLenses)
        return [
            (x["line"], x["start"], x["end"], x["heading"], x["links"]) for x in answer["lenses"]
        ]

    # b: [[b]], ../b.md#second-part and [[b#Second part]] from a.
    assert lenses("b.md") == [(4, 2, 5, "", 3), (8, 3, 14, "Second part", 2)]
    assert lenses("notes/a.md") == [(1, 2, 7, "", 2), (6, 3, 16, "Local heading", 1)]
    assert lenses("c.md") == [(1, 2, 3, "", 0)]  # nothing links to c: it says so
    # The editor's unsaved text places them: a heading moved down one line.
    moved = B.replace("## Second part", "\n## Second part")
    assert lenses("b.md", {"text": moved})[1][:1] == (9,)


def test_counts_follow_an_edit_once_it_is_indexed(ws, vault):
    write(vault, "d.md", "# D\n\n[[b#Second part]] again.\n")
    ws.call("index.run", ["v"])
    got = ws.call("doc.lenses", ["v", "b.md"])["lenses"]
    assert [x["links"] for x in got] == [4, 3]


@pytest.mark.parametrize(
    "params",
    [
        ["v", "notes/a.md", 0, 0],
        ["v", "notes/a.md", 1, -1],
        ["v", "notes/a.md", True, 0],
        ["v", "../outside.md", 1, 0],
        ["v", "notes/a.md", 1, 0, {"units": "utf-7"}],
        ["nope", "notes/a.md", 1, 0],
    ],
)
def test_bad_positions_are_refused(ws, params):
    with pytest.raises(RpcError) as err:
        ws.call("doc.actions", params)
    assert err.value.code in (INVALID_PARAMS, -32001)


def test_nothing_is_written(ws, vault):
    before = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*") if p.is_file())
    for line in range(1, 12):
        for character in range(0, 80, 7):
            actions(ws, line, character)
    after = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*") if p.is_file())
    assert after == before
    assert not re.search(r"nowhere|gone|deep", " ".join(after))
