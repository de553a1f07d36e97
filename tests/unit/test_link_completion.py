"""Link completion (`links.complete`, `links.preview`) through the dispatcher, as every front end
calls it, on real stores: each context, the link style read from the vault's own links and set
by the workspace option, unsaved text, units, caps; the order by the paragraph's meaning with
the bundled model, and by names and links without one."""

from __future__ import annotations

import contextlib
import shutil
import time

import pytest

from autodoc.links.completion_context import context_at, paragraph, paragraph_ahead
from autodoc.links.link_style import LinkStyle
from autodoc.wire import link_answers, protocol
from autodoc.wire.errors import INVALID_PARAMS, RpcError

from ..conftest import EXAMPLE_VAULT, fake_openai_engine, lexical_workspace, write
from ..fake_openai import FakeOpenAI

PIPELINE = "notes/search-pipeline.md"
SQLITE = "adr/0003-embedded-sqlite-store.md"
LEASE = "adr/0004-lease-recovery.md"


def complete(rpc, text: str, path: str = "notes/draft.md", line: int | None = None,
             character: int | None = None, **opts) -> dict:  # fmt: skip
    """`links.complete` at the end of `text`'s last line (or at `line`, `character`) with
    `text` as the editor's unsaved document; the answer, checked to be its wire type."""
    lines = text.split("\n")
    line = line or len(lines)
    character = len(lines[line - 1]) if character is None else character
    answer = rpc.call("links.complete", ["v", path, line, character, {"text": text, **opts}])
    protocol.conform(answer, link_answers.LinkCompletion)
    return answer


def applied(text: str, answer: dict, item: dict) -> str:
    """The line after taking `item` (its new text over [start, end), and the extra edits), as
    an editor applies it; columns in characters (utf-32, the default units)."""
    line = text.split("\n")[answer["line"] - 1]
    edits = [(answer["start"], answer["end"], item["new_text"])]
    edits += [(e["start"], e["end"], e["new_text"]) for e in answer["extra"]]
    for start, end, new in sorted(edits, reverse=True):
        line = line[:start] + new + line[end:]
    return line


def labels(answer: dict) -> list[str]:
    return [i["label"] for i in answer["items"]]


@pytest.fixture
def wiki(rpc, vault):
    """The example vault (its links mostly wiki links, by file name), lexical only."""
    shutil.copytree(EXAMPLE_VAULT, vault, dirs_exist_ok=True)
    write(vault, "notes/blocks.md", "# Blocks\n\nA paragraph to cite. ^para-one\n\n"
          "- an item ^item-2\n\n```\ncode ^not-a-block\n```\n")  # fmt: skip
    lexical_workspace(rpc, vault)
    return rpc


@pytest.fixture
def markdown(rpc, vault):
    """A vault whose links are Markdown links with `.md`, headings as slugs."""
    write(vault, "guide/setup.md", "# Setup\n\nRead [the install](install.md) first.\n\n"
          "## Build steps\n\nSee [steps](../reference/flags.md#known-flags).\n")  # fmt: skip
    write(vault, "guide/install.md", "# Install\n\nBack to [setup](setup.md).\n")
    write(vault, "reference/flags.md", "# Flags\n\n## Known flags\n\n[Setup](../guide/setup.md)\n")
    lexical_workspace(rpc, vault)
    return rpc


def test_after_double_brackets_notes_by_title_alias_and_file_name(wiki):
    text = "Draft.\n\nSee [[sea"
    got = complete(wiki, text)
    assert got["context"] == "note" and got["ranked_by"] == "names"
    assert (got["start"], got["end"]) == (6, 9)  # the typed name, after the `[[`
    first = got["items"][0]
    assert first["label"] == "Search pipeline" and first["path"] == PIPELINE
    assert first["filter_text"].startswith("sea")  # a prefix filter keeps it
    assert applied(text, got, first) == "See [[search-pipeline]]"
    # By a later word of its title; by its alias (the label kept, Obsidian's order)
    assert complete(wiki, "[[pipel")["items"][0]["path"] == PIPELINE
    alias = complete(wiki, "[[storage dec")
    assert alias["items"][0]["label"] == "storage decision"
    assert applied("[[storage dec", alias, alias["items"][0]) == (
        "[[0003-embedded-sqlite-store|storage decision]]"
    )
    # By its file name's start (a record's number)
    assert complete(wiki, "[[0004")["items"][0]["path"] == LEASE
    assert complete(wiki, "[[zzzz")["items"] == []


def test_the_inserted_link_resolves(wiki):
    """What completion writes is a link the index resolves to the note offered."""
    for typed, path in (("[[sea", PIPELINE), ("[[storage dec", SQLITE), ("[[0004", LEASE)):
        got = complete(wiki, typed)
        line = applied(typed, got, got["items"][0])
        target = wiki.call("links.definition", ["v", "notes/draft.md", 1, 3, {"text": line}])
        assert target["target"]["path"] == path, line


def test_a_closer_already_there_is_not_written_twice(wiki):
    text = "See [[sea]] now"
    got = complete(wiki, text, character=9)
    assert applied(text, got, got["items"][0]) == "See [[search-pipeline]] now"
    text = "See [[search-pipeline#Fu]]"
    got = complete(wiki, text, character=24)
    assert applied(text, got, got["items"][0]) == "See [[search-pipeline#Fusion]]"


def test_headings_of_a_note_of_the_open_document_and_block_ids(wiki):
    got = complete(wiki, "[[search-pipeline#")
    assert got["context"] == "heading"
    assert labels(got)[:3] == ["Search pipeline", "Stages", "Lexical"]
    fusion = complete(wiki, "[[search-pipeline#fu")["items"]
    assert [(i["label"], i["new_text"], i["line"]) for i in fusion] == [("Fusion", "Fusion]]", 39)]
    # `[[#`: the document's own headings, from the editor's text (never saved)
    text = "# Draft\n\n## Unsaved part\n\nSee [[#Un"
    assert [i["new_text"] for i in complete(wiki, text)["items"]] == ["Unsaved part]]"]
    # `[[note#^`: block ids at line ends, not inside code
    got = complete(wiki, "[[blocks#^")
    assert got["context"] == "block"
    assert [(i["label"], i["line"]) for i in got["items"]] == [("^para-one", 3), ("^item-2", 5)]
    assert applied("[[blocks#^it", complete(wiki, "[[blocks#^it"), got["items"][1]) == (
        "[[blocks#^item-2]]"
    )
    assert complete(wiki, "[[no-such-note#")["items"] == []


def test_crlf_lines_complete_as_lf_ones(wiki, vault):
    """A CRLF document (the editor's and a note's on disk): the span ends before the `\r`, the
    document's own headings and another note's block ids are read without it."""
    text = "# Draft\r\n\r\n## Unsaved part\r\n\r\nSee [[sea]]\r\nmore\r\n"
    got = complete(wiki, text, line=5, character=9)
    assert (got["start"], got["end"], got["replace_end"]) == (6, 9, 9)
    assert applied(text, got, got["items"][0]) == "See [[search-pipeline]]\r"  # kept
    # no closer: the name ends at the `\r`
    got = complete(wiki, "See [[sea\r\nmore", line=1, character=9)
    assert (got["end"], got["replace_end"]) == (9, 9)
    own = complete(wiki, "# Draft\r\n\r\n## Unsaved part\r\n\r\nSee [[#Un\r\n", line=5)
    assert [i["new_text"] for i in own["items"]] == ["Unsaved part]]"]
    write(vault, "notes/crlf.md", "# CRLF\r\n\r\nCited. ^cited-one\r\n")
    wiki.call("index.run", ["v"])
    got = complete(wiki, "[[crlf#^")
    assert [(i["label"], i["line"]) for i in got["items"]] == [("^cited-one", 3)]


def test_a_name_starting_with_the_letters_before_a_folder_starting_with_them(wiki, vault):
    """`[[note`: a note named "Notebook habits" first, then the notes under `notes/` (every path
    in a folder starts with its letters), however often those are linked."""
    write(vault, "adr/notebooks.md", "# Notebook habits\n")
    for i in range(30):  # more linked notes under `notes/` than the rows read for 5 entries
        write(vault, f"notes/n{i}.md", f"# Item {i}\n")
    write(vault, "hub.md", "# Hub\n\n" + " ".join(f"[[n{i}]]" for i in range(30)) + "\n")
    wiki.call("index.run", ["v"])
    paths = [i["path"] for i in complete(wiki, "See [[note", limit=5)["items"]]
    assert paths[0] == "adr/notebooks.md" and paths[1].startswith("notes/")


def test_the_note_being_written_is_not_offered(wiki):
    paths = [i["path"] for i in complete(wiki, "See [[000", path=SQLITE)["items"]]
    assert len(paths) == 3 and SQLITE not in paths
    assert SQLITE in [i["path"] for i in complete(wiki, "See [[000")["items"]]
    assert SQLITE not in [i["path"] for i in complete(wiki, "See [[", path=SQLITE)["items"]]


def test_markdown_paths_relative_to_the_note_and_heading_slugs(markdown):
    got = complete(markdown, "See [x](", path="guide/new.md")
    assert got["context"] == "path"
    assert labels(got) == ["install.md", "setup.md"]  # its own folder
    got = complete(markdown, "See [x](../", path="guide/new.md")
    kinds = [(i["label"], i["kind"]) for i in got["items"]]
    assert kinds == [("guide/", "folder"), ("reference/", "folder")]
    text = "See [x](../reference/fl"
    got = complete(markdown, text, path="guide/new.md")
    assert applied(text, got, got["items"][0]) == "See [x](../reference/flags.md)"
    text = "See [x](../reference/flags.md#kn"
    got = complete(markdown, text, path="guide/new.md")
    assert got["context"] == "anchor"
    line = applied(text, got, got["items"][0])
    assert line == "See [x](../reference/flags.md#known-flags)"
    target = markdown.call("links.definition", ["v", "guide/new.md", 1, 6, {"text": line}])
    assert target["target"]["path"] == "reference/flags.md"
    assert target["target"]["heading"] == "Known flags"
    # `](#`: the open document's own headings, unsaved
    own = "# Top\n\n## Next step\n\nGo [there](#ne"
    assert [i["new_text"] for i in complete(markdown, own)["items"]] == ["next-step)"]
    assert complete(markdown, "See [x](../../", path="guide/new.md")["items"] == []  # outside


def test_tags_at_a_word_start_with_their_counts(wiki):
    got = complete(wiki, "Filed under #sto")
    assert got["context"] == "tag"
    assert [(i["label"], i["detail"]) for i in got["items"]] == [("#storage", "4 notes")]
    assert applied("Filed under #sto", got, got["items"][0]) == "Filed under #storage"
    assert complete(wiki, "## A heading #sto")["context"] == "none"  # a heading line
    assert complete(wiki, "word#sto")["context"] == "none"  # not a word's start
    assert complete(wiki, "```\n#sto", line=2)["context"] == "none"  # code
    assert complete(wiki, "~~~ md\nSee [[sea", line=2)["context"] == "none"
    assert complete(wiki, "> ```\n> See [[sea", line=2)["context"] == "none"  # in a quote
    assert complete(wiki, "- item\n\n      ```\n      [[sea", line=4)["context"] == "none"
    assert complete(wiki, "```\ncode\n```\nSee [[sea", line=4)["context"] == "note"
    assert complete(wiki, "---\ntags: #sto\n---\n", line=2, character=10)["context"] == "none"
    assert complete(wiki, "`code [[sea")["context"] == "none"  # inline code


def test_a_markdown_vault_gets_markdown_links(markdown):
    """The vault writes `[label](path.md)`: after `[[` the entry rewrites the `[[` to `[` and
    writes a Markdown link relative to the note, a title as its label."""
    text = "See [[fla"
    got = complete(markdown, text, path="guide/new.md")
    assert got["style"]["form"] == "markdown" and got["style"]["extension"] is True
    line = applied(text, got, got["items"][0])
    assert line == "See [Flags](../reference/flags.md)"
    target = markdown.call("links.definition", ["v", "guide/new.md", 1, 6, {"text": line}])
    assert target["target"]["path"] == "reference/flags.md"
    # an auto-paired `]]` goes too
    got = complete(markdown, "See [[fla]]", path="guide/new.md", character=9)
    assert applied("See [[fla]]", got, got["items"][0]) == "See [Flags](../reference/flags.md)"


def test_the_workspace_option_overrides_the_vault(wiki):
    assert complete(wiki, "[[sea")["style"]["form"] == "wiki"
    wiki.call("workspace.configure", ["v", {"link_style": {"form": "markdown",
                                                           "extension": False}}])  # fmt: skip
    got = complete(wiki, "[[sea", path="adr/new.md")
    assert got["style"]["form"] == "markdown"
    assert applied("[[sea", got, got["items"][0]) == "[Search pipeline](../notes/search-pipeline)"
    wiki.call("workspace.configure", ["v", {"link_style": {"form": "wiki", "name": "path",
                                                           "extension": True}}])  # fmt: skip
    got = complete(wiki, "[[sea")
    assert applied("[[sea", got, got["items"][0]) == "[[notes/search-pipeline.md]]"
    for bad in ({"form": "html"}, {"extension": 1}, {"colour": "red"}, "wiki"):
        with pytest.raises(RpcError) as err:
            wiki.call("workspace.configure", ["v", {"link_style": bad}])
        assert err.value.code == INVALID_PARAMS


def test_columns_in_the_units_asked_for(wiki):
    """Non-ASCII before the cursor: the span is counted in the client's units."""
    text = "😀 é [[sea"
    for units, start in (("utf-32", 6), ("utf-16", 7), ("utf-8", 10)):
        end = {"utf-32": 9, "utf-16": 10, "utf-8": 13}[units]
        got = complete(wiki, text, character=end, units=units)
        assert (got["start"], got["end"]) == (start, end), units
        assert got["items"][0]["path"] == PIPELINE


def test_the_list_is_cut_and_says_so(wiki):
    got = complete(wiki, "[[", limit=2)
    assert len(got["items"]) == 2 and got["incomplete"] is True
    assert complete(wiki, "[[sea")["incomplete"] is False
    with pytest.raises(RpcError) as err:
        complete(wiki, "[[", limit=0)
    assert err.value.code == INVALID_PARAMS


def test_nothing_typed_and_no_vectors_the_most_linked_first(wiki):
    got = complete(wiki, "Some prose.\n\n[[")
    assert got["ranked_by"] == "links"
    assert got["items"][0]["path"] == SQLITE  # four notes link to it, more than to any other


def test_preview_gives_a_notes_title_and_first_lines(wiki):
    got = wiki.call("links.preview", ["v", PIPELINE, 39])
    protocol.conform(got, link_answers.LinkPreview)
    assert (got["title"], got["heading"]) == ("Search pipeline", "Fusion")
    assert "reciprocal rank fusion" in got["preview"]
    whole = wiki.call("links.preview", ["v", PIPELINE, None])
    assert whole["heading"] == "" and whole["preview"].startswith("This note describes")
    with pytest.raises(RpcError) as err:
        wiki.call("links.preview", ["v", "notes/none.md"])
    assert err.value.code == INVALID_PARAMS


def test_link_style_writes_each_form():
    wiki = LinkStyle(form="wiki", extension=False, shared_stems=frozenset({"index"}))
    assert wiki.link("notes/a b.md") == "[[a b]]"
    assert wiki.link("notes/a.md", heading="Known gaps") == "[[a#Known gaps]]"
    assert wiki.link("notes/a.md", label="A") == "[[a]]"  # the label says what it names
    assert wiki.link("notes/a.md", label="Another") == "[[a|Another]]"
    assert wiki.link("x/index.md") == "[[x/index]]"  # a file name two notes share
    dendron = LinkStyle(form="wiki", extension=False, heading="slug", alias="label-first")
    assert dendron.link("a.b.md", heading="Known gaps", label="See") == "[[See|a.b#known-gaps]]"
    md = LinkStyle(form="markdown", extension=True)
    assert md.link("docs/x y.md", from_path="notes/n.md") == "[x y](../docs/x%20y.md)"
    assert md.link("a.md", heading="Part two", label="Two", from_path="a.md") == "[Two](#part-two)"
    assert LinkStyle(form="markdown", extension=False).link("a.md", label="[A]") == "[\\[A\\]](a)"


def test_a_lone_bracket_works_out_the_paragraph_the_link_will_have():
    """At `[` the paragraph a `[[` typed next is ranked by (worked out ahead: the same text,
    so the `[[` request finds its notes kept), with or without an editor's closing brackets."""
    for before, after in (("See [", "See [["), ("See []", "See [[]]"), ("x [ y", "x [[ y")):
        lines = ["First line of it.", before, "Last line."]
        cursor = before.index("[") + 1
        where = context_at(["First line of it.", after, "Last line."], 1, cursor + 1)
        assert where is not None and where.kind == "note"
        expected = paragraph(["First line of it.", after, "Last line."], 1, where)
        assert paragraph_ahead(lines, 1, cursor) == expected != ""
    assert paragraph_ahead(["See [[x"], 0, 6) == ""  # not a lone `[`
    assert paragraph_ahead(["See x"], 0, 5) == ""


@pytest.fixture(scope="module")
def meaning(tmp_path_factory):
    """The example vault with the bundled model's vectors, once for the module."""
    from autodoc.engine import Engine
    from autodoc.serve.dispatcher import Dispatcher

    root = tmp_path_factory.mktemp("meaning") / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    rpc = Dispatcher(Engine(root.parent / "store" / "autodoc.db"))
    rpc.call("workspace.add", ["v", str(root)])
    rpc.call("index.run", ["v"])
    yield rpc
    rpc.engine.close()


CRASH = ("When the sidecar that holds the writer lock is killed, the lock file stays behind and"
         " nobody can write until someone deletes it by hand. ")  # fmt: skip


def by_meaning(rpc, text: str, **where) -> dict:
    """The answer once the paragraph's meaning is worked out: a request waits for it at most
    20 ms, and says `incomplete` (ask again) until then."""
    deadline = time.monotonic() + 60
    while (got := complete(rpc, text, **where))["ranked_by"] != "meaning" and (
        time.monotonic() < deadline
    ):
        assert got["incomplete"] is True
        time.sleep(0.05)
    return got


def test_little_typed_the_paragraphs_meaning_orders_the_notes(meaning):
    """Nothing or one letter typed: the notes nearest the paragraph come first; without the
    model, the most linked (names alone give `0003` before `0004`)."""
    got = by_meaning(meaning, CRASH + "See [[")
    assert got["ranked_by"] == "meaning"
    assert got["items"][0]["path"] == LEASE
    # written in the nearest note itself: the others (a note does not link to itself)
    got = by_meaning(meaning, CRASH + "See [[", path=LEASE)
    assert got["items"] and LEASE not in [i["path"] for i in got["items"]]
    got = complete(meaning, CRASH + "See [[0")  # the same paragraph: its notes are kept
    assert got["ranked_by"] == "meaning" and got["items"][0]["path"] == LEASE
    assert all(i["filter_text"].startswith("0") for i in got["items"])
    # From three letters on, what was typed decides (the name index), not the paragraph
    got = complete(meaning, CRASH + "See [[sea")
    assert got["ranked_by"] == "names" and got["items"][0]["path"] == PIPELINE
    meaning.call("workspace.configure", ["v", {"embedding": "none"}])
    try:
        got = complete(meaning, CRASH + "See [[0")
        assert got["ranked_by"] == "names" and got["items"][0]["path"] == SQLITE
    finally:
        meaning.call("workspace.configure", ["v", {"embedding": {"provider": "bundled"}}])


@contextlib.contextmanager
def over_a_provider(tmp_path):
    """(dispatcher, provider): the example vault indexed through a local OpenAI-protocol
    server (tests/fake_openai.py) whose mode and delay a test sets."""
    from autodoc.serve.dispatcher import Dispatcher

    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    with FakeOpenAI(dim=32) as server:
        rpc = Dispatcher(fake_openai_engine(tmp_path / "store" / "autodoc.db", root, server.url))
        try:
            rpc.call("index.run", ["v"])
            yield rpc, server
        finally:
            rpc.engine.close()


def test_a_slow_or_failing_model_embeds_only_the_paragraph_being_written(tmp_path):
    """Each paragraph's embedding is one request to the provider: one asked for while another
    is being embedded replaces the one waiting (a writer who moved on), and one the provider
    failed on is not asked again at each keystroke."""
    with over_a_provider(tmp_path) as (rpc, server):

        def asked(word: str) -> int:
            return sum(word in str(r["body"]["input"]) for r in server.requests)

        server.mode = "slow"  # 2 s a request
        for word in ("alpha", "bravo", "charlie", "delta"):
            assert complete(rpc, f"About {word} things. See [[")["incomplete"] is True
        got = by_meaning(rpc, "About delta things. See [[")
        assert got["ranked_by"] == "meaning" and got["incomplete"] is False
        assert [asked(w) for w in ("alpha", "bravo", "charlie", "delta")] == [1, 0, 0, 1]
        server.mode = "fail"
        for _ in range(5):
            got = complete(rpc, "About echo things. See [[")
            time.sleep(0.05)
        assert (got["ranked_by"], got["incomplete"]) == ("links", False)  # names alone
        assert asked("echo") == 1


def test_a_lone_wiki_opener_waits_for_the_paragraphs_notes(tmp_path):
    """At `[[` with nothing typed the first answer is ranked by the paragraph's meaning when the
    model answers within the longer wait (a provider taking 100 ms); a letter typed after it
    waits no longer than a keystroke may (20 ms)."""
    with over_a_provider(tmp_path) as (rpc, server):
        server.delay = 0.1
        got = complete(rpc, "About lease recovery after a crash. See [[")
        assert (got["ranked_by"], got["incomplete"]) == ("meaning", False)
        started = time.monotonic()
        got = complete(rpc, "About search ranking and fusion. See [[s")
        assert got["incomplete"] is True and time.monotonic() - started < 0.09
