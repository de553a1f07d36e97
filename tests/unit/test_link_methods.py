"""The `links.*` methods (an editor's definition, hover, references, document links and
diagnostics) through the dispatcher, as every front end calls them; and the LSP front end
reaching them only that way."""

from __future__ import annotations

import re

import pytest

from autodoc.wire import link_answers, protocol
from autodoc.wire.errors import INVALID_PARAMS, RpcError

from ..conftest import REPO, lexical_workspace, write

A = "# Alpha\n\nSee [[b]] and [the part](../b.md#second-part) and [[nowhere]].\n" \
    "😀 [[b#Second part]] here.\n\n## Local heading\n\nText.\n"  # fmt: skip
B = "---\ntitle: Bee\n---\n# Bee\n\nIntro line.\n\n## Second part\n\nPart text line one.\n" \
    "Part text line two.\n"  # fmt: skip
C = "# C\n\nLinks to [[a#Local heading]] and [[a]].\n"
B_DOC = {"path": "b.md", "line": 1, "title": "Bee", "heading": ""}
B_PART = {"path": "b.md", "line": 8, "title": "Bee", "heading": "Second part"}


@pytest.fixture
def ws(rpc, vault):
    write(vault, "notes/a.md", A)
    write(vault, "b.md", B)
    write(vault, "c.md", C)
    lexical_workspace(rpc, vault)
    return rpc


ANSWERS = {
    "links.definition": link_answers.LinkAt,
    "links.hover": link_answers.LinkHover,
    "links.references": link_answers.LinkReferences,
}


def at(rpc, method, path, line, character, opts=None):
    """A position method's answer, checked to be exactly its wire type."""
    answer = rpc.call(method, ["v", path, line, character, opts])
    if answer is not None:
        protocol.conform(answer, ANSWERS[method])
    return answer


def test_definition_follows_wiki_markdown_and_heading_links(ws):
    got = at(ws, "links.definition", "notes/a.md", 3, 5)  # inside `[[b]]`
    assert got == {"workspace": "v", "path": "notes/a.md", "line": 3, "start": 4, "end": 9,
                   "target": B_DOC}  # fmt: skip
    got = at(ws, "links.definition", "notes/a.md", 3, 20)  # `[the part](../b.md#second-part)`
    assert (got["start"], got["end"], got["target"]) == (14, 45, B_PART)
    got = at(ws, "links.definition", "notes/a.md", 3, 55)  # `[[nowhere]]`: a link, no target
    assert (got["start"], got["end"], got["target"]) == (50, 61, None)
    assert at(ws, "links.definition", "notes/a.md", 3, 1) is None  # prose: no link
    assert at(ws, "links.definition", "notes/a.md", 3, 9) is None  # just past `[[b]]`
    assert at(ws, "links.definition", "notes/a.md", 99, 0) is None  # past the end


def test_columns_are_counted_in_the_units_asked_for(ws):
    """Line 4 starts with an emoji: one character, two UTF-16 code units, four UTF-8 bytes."""
    for units, first, last in (("utf-32", 2, 19), ("utf-16", 3, 20), ("utf-8", 5, 22)):
        got = at(ws, "links.definition", "notes/a.md", 4, first, {"units": units})
        assert (got["start"], got["end"], got["target"]) == (first, last, B_PART), units
        assert at(ws, "links.definition", "notes/a.md", 4, last, {"units": units}) is None
    # Column 2 is the link in characters, but the space after the emoji in UTF-16.
    assert at(ws, "links.definition", "notes/a.md", 4, 2, {"units": "utf-16"}) is None
    # A column past the end is the line's last character (as pygls reads an LSP position).
    assert at(ws, "links.definition", "notes/a.md", 1, 99, {"text": "See [[b]]"})["end"] == 9
    assert at(ws, "links.definition", "notes/a.md", 1, 9, {"text": "See [[b]]"}) is None


def test_the_clients_unsaved_text_is_read_not_the_file(ws):
    """An edit not saved yet: the link is where the editor's line has it, and one the index has
    not seen resolves by the key the indexer would give it."""
    line = "See   [[b]] and more."
    got = at(ws, "links.definition", "notes/a.md", 3, 7, {"text": line})
    assert (got["start"], got["end"], got["target"]) == (6, 11, B_DOC)
    got = at(ws, "links.definition", "notes/a.md", 8, 7, {"text": "Text [[c]]."})
    assert got["target"] == {"path": "c.md", "line": 1, "title": "C", "heading": ""}
    assert at(ws, "links.definition", "notes/a.md", 3, 5, {"text": "no links now"}) is None


def test_hover_adds_the_first_lines_of_the_section_linked_to(ws):
    got = at(ws, "links.hover", "notes/a.md", 4, 3, {"units": "utf-16"})
    assert got["target"] == B_PART and (got["start"], got["end"]) == (3, 20)
    assert got["preview"] == "Part text line one.\nPart text line two."
    assert at(ws, "links.hover", "notes/a.md", 3, 55)["preview"] == ""  # leads nowhere
    assert at(ws, "links.hover", "notes/a.md", 1, 0) is None


def test_references_to_a_link_target_a_heading_or_the_document(ws):
    def places(path, line, character):
        got = at(ws, "links.references", path, line, character)
        return got["path"], got["heading"], [(p["path"], p["line"]) for p in got["places"]]

    every = [("notes/a.md", 3), ("notes/a.md", 3), ("notes/a.md", 4)]
    assert places("b.md", 4, 0) == ("b.md", "", every)  # the title: every link to the document
    assert places("b.md", 6, 0) == ("b.md", "", every)  # prose
    part = [("notes/a.md", 3), ("notes/a.md", 4)]
    assert places("b.md", 8, 0) == ("b.md", "Second part", part)  # a heading: links to it
    local = ("notes/a.md", "Local heading", [("c.md", 3)])
    assert places("notes/a.md", 6, 0) == local
    assert places("c.md", 3, 10) == local  # on a link: to its target
    assert places("c.md", 3, 35) == ("notes/a.md", "", [("c.md", 3), ("c.md", 3)])
    assert places("notes/a.md", 3, 55) == ("notes/a.md", "", [("c.md", 3), ("c.md", 3)])
    # each place is the link itself on its line (a quickfix list or xref jumps to its column)
    got = at(ws, "links.references", "b.md", 4, 0)["places"]
    line3, line4 = A.split("\n")[2], A.split("\n")[3]
    spans = [(p["line"], p["start"], p["end"]) for p in got]
    assert spans == [
        (3, line3.index("[[b]]"), line3.index("[[b]]") + 5),
        (3, line3.index("[the part]"), line3.index(" and [[nowhere")),
        (4, line4.index("[[b#"), line4.index("[[b#") + len("[[b#Second part]]")),
    ]
    utf16 = at(ws, "links.references", "b.md", 4, 0, {"units": "utf-16"})["places"][2]
    assert utf16["start"] == line4.index("[[b#") + 1  # the emoji before it: two UTF-16 units


def test_document_links_are_placed_on_the_text(ws):
    got = ws.call("links.document", ["v", "notes/a.md", {"units": "utf-8"}])
    protocol.conform(got, link_answers.DocumentLinks)
    assert [(k["line"], k["start"], k["end"], k["target"]) for k in got["links"]] == [
        (3, 4, 9, B_DOC),
        (3, 14, 45, B_PART),
        (3, 50, 61, None),
        (4, 5, 22, B_PART),
    ]
    edited = A.replace("See [[b]]", "See  [[b]]")  # the editor's text, one space more
    got = ws.call("links.document", ["v", "notes/a.md", {"text": edited}])
    assert [(k["line"], k["start"]) for k in got["links"]] == [(3, 5), (3, 15), (3, 51), (4, 2)]
    assert ws.call("links.document", ["v", "c.md", {"text": ""}])["links"] == []


def test_diagnostics_are_the_unresolved_links_check_finds(ws, vault):
    got = ws.call("links.diagnostics", ["v", "notes/a.md"])
    protocol.conform(got, link_answers.LinkDiagnostics)
    line = A.splitlines()[2]
    message = "link to 'nowhere' does not resolve"
    start = line.index("[[nowhere]]")  # the link's own range, not the line's
    end = start + len("[[nowhere]]")
    assert got["findings"] == [{"line": 3, "start": start, "end": end, "severity": "error",
                                "kind": "link", "message": message}]  # fmt: skip
    checked = ws.call("index.check", ["v"])["findings"]
    assert [(f["path"], f["line"], f["message"]) for f in checked if f["kind"] == "link"] == [
        ("notes/a.md", 3, "link to 'nowhere' does not resolve")
    ]
    text = A.replace("See ", "😀 See ")  # spans are the editor's line, in its units
    got = ws.call("links.diagnostics", ["v", "notes/a.md", {"text": text, "units": "utf-16"}])
    assert (got["findings"][0]["start"], got["findings"][0]["end"]) == (start + 3, end + 3)
    assert ws.call("links.diagnostics", ["v", "b.md"])["findings"] == []
    write(vault, "nowhere.md", "# Nowhere\n")  # the target appears: the finding goes
    ws.call("index.run", ["v"])
    assert ws.call("links.diagnostics", ["v", "notes/a.md"])["findings"] == []


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("links.definition", ["v", "notes/a.md", 0, 0]),  # lines are 1-based
        ("links.definition", ["v", "notes/a.md", 1, -1]),
        ("links.definition", ["v", "notes/a.md", True, 0]),
        ("links.definition", ["v", "notes/a.md", 2**63, 0]),
        ("links.definition", ["v", "notes/a.md", 1, "3"]),
        ("links.hover", ["v", "notes/a.md", 1, 0, {"units": "utf-7"}]),
        ("links.hover", ["v", "notes/a.md", 1, 0, {"bogus": 1}]),
        ("links.hover", ["v", "notes/a.md", 1, 0, {"text": 3}]),
        ("links.hover", ["v", "notes/a.md", 1, 0, {"text": "\ud800"}]),
        ("links.hover", ["v", "notes/a.md", 1, 0, []]),
        ("links.references", ["v", "../outside.md", 1, 0]),
        ("links.references", ["v", "/etc/passwd", 1, 0]),
        ("links.references", ["v", "missing.md", 1, 0]),  # no text given: the file is read
        ("links.references", ["nope", "notes/a.md", 1, 0]),
        ("links.references", ["v", "notes/a.md", 1]),
        ("links.document", ["v", ""]),
        ("links.document", ["v", "notes/a.md", {"units": None}]),
        ("links.diagnostics", ["v", 7]),
        ("links.diagnostics", ["v", "notes/a.md", {}, 1]),
    ],
)
def test_malformed_requests_get_invalid_params(ws, method, params):
    with pytest.raises(RpcError) as err:
        ws.call(method, params)
    assert err.value.code == INVALID_PARAMS, err.value.to_dict()


def test_an_unsaved_document_is_answered_from_its_text(ws):
    """A new file the editor has not saved: no file to read, the text is enough."""
    got = at(ws, "links.definition", "new.md", 1, 1, {"text": "[[b]]"})
    assert got["target"] == B_DOC
    links = ws.call("links.document", ["v", "new.md", {"text": "[[b]]\n"}])["links"]
    assert links == []  # the index holds no links of it yet


LSP = REPO / "sidecar" / "autodoc" / "serve" / "lsp"
BELOW = "store|query|index|bm25|vectors|models|engine"  # what only the dispatcher reaches
LOWER = re.compile(rf"^[ \t]*(?:from|import) autodoc\.(?:{BELOW})\b", re.M)


def test_the_lsp_front_end_reaches_the_index_only_through_the_dispatcher():
    """No LSP module opens the store or calls the engine: every feature is a dispatcher method
    through the host (which opens the store too: `Host.over_store`)."""
    modules = sorted(LSP.rglob("*.py"))
    assert len(modules) > 5
    for path in modules:
        text = path.read_text()
        assert ".engine." not in text and ".store." not in text, path
        imports = LOWER.findall(text)
        assert imports == [], path


# -- doc.outline: the heading tree an editor shows ---------------------------------------------

OUTLINE = (
    "---\ntitle: T\n---\n# Top 😀 title\n\nText.\n\n## C#\n\n```\n# not a heading\n```\n\n"
    "### Deep ##\n\nSetext two\n----------\n\n> # quoted heading\n\n# Second top\nLast line.\n"
)


def test_the_outline_is_the_heading_tree_the_index_reads(ws, vault):
    write(vault, "outline.md", OUTLINE)
    ws.call("index.run", ["v"])
    got = ws.call("doc.outline", ["v", "outline.md", {"units": "utf-16"}])
    protocol.conform(got, link_answers.DocumentOutline)
    rows = [(h["level"], h["text"], h["line"], h["start"], h["end"], h["line_end"])
            for h in got["headings"]]  # fmt: skip
    assert rows == [
        (1, "Top 😀 title", 4, 2, 14, 20),  # the emoji is two UTF-16 units
        (2, "C#", 8, 3, 5, 15),  # `C#` keeps its `#`: no space before it
        (3, "Deep", 14, 4, 8, 15),  # the closing run is not a word
        (2, "Setext two", 16, 0, 10, 20),
        (1, "Second top", 21, 2, 12, 22),  # to the last line, not past the final newline
    ]  # neither the fenced `# not a heading` nor the quoted heading: they are text
    characters = ws.call("doc.outline", ["v", "outline.md"])["headings"][0]
    assert (characters["start"], characters["end"]) == (2, 13)
    # a search's row for a section lands on the line the outline gives its heading
    lines = {h["text"]: h["line"] for h in got["headings"]}
    for words, heading in (
        ("c#", "C#"),
        ("setext two", "Setext two"),
        ("second top", "Second top"),
    ):
        hits = ws.call("search.query", ["v", words, {"paths": ["outline.md"]}])["hits"]
        assert hits and hits[0]["line"] == lines[heading], words


def test_the_outline_reads_the_clients_unsaved_text(ws):
    got = ws.call("doc.outline", ["v", "b.md", {"text": "Intro\n\n# Draft\n\n## Part\ntext"}])
    assert [(h["text"], h["line"], h["line_end"]) for h in got["headings"]] == [
        ("Draft", 3, 6),
        ("Part", 5, 6),
    ]
    with pytest.raises(RpcError) as err:
        ws.call("doc.outline", ["v", "../outside.md"])
    assert err.value.code == INVALID_PARAMS


def test_anchors_match_as_github_writes_them(rpc, vault):
    """`#whats-new` and `#c--rust` (GitHub's, GitLab's, Pandoc's anchors), a collapsed
    `#c-rust` and a wiki link's words all lead to the heading they name."""
    write(vault, "b.md", "# B\n\n## What's new?\n\nNews.\n\n## C & Rust\n\nBoth.\n")
    write(vault, "a.md", "[n](b.md#whats-new) [c](b.md#c--rust) [d](b.md#c-rust) [[b#C & Rust]]\n")
    lexical_workspace(rpc, vault)
    line = (vault / "a.md").read_text().splitlines()[0]
    got = rpc.call("links.document", ["v", "a.md"])["links"]
    assert [(line[x["start"] : x["end"]], x["target"]["heading"]) for x in got] == [
        ("[n](b.md#whats-new)", "What's new?"),
        ("[c](b.md#c--rust)", "C & Rust"),
        ("[d](b.md#c-rust)", "C & Rust"),
        ("[[b#C & Rust]]", "C & Rust"),
    ]
    assert len(rpc.call("links.references", ["v", "b.md", 7, 4])["places"]) == 3
