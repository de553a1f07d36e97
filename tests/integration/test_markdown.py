"""Sections where a Markdown reader sees them: the block structure comes from a CommonMark
parser, checked against the CommonMark spec's own examples and the cases a hand-written
scanner got wrong."""

from __future__ import annotations

import json
import operator
import re
import subprocess
import textwrap
import time
from html.parser import HTMLParser

import pytest

from autodoc.parse import names
from autodoc.parse.chunking import Chunker, estimate_tokens, find_sections
from autodoc.parse.document import parse_document, prose_runs
from autodoc.parse.markdown import STRUCTURE_FORMAT

from .. import limits
from ..conftest import LONG, REPO, corpus, lexical_workspace, missing, tool, write

SPEC_PACKAGE = REPO / ".tools" / "node_modules" / "commonmark-spec"


def parse(text: str, path: str = "doc.md"):
    return parse_document(textwrap.dedent(text).lstrip("\n").encode(), path)


def sections(doc) -> list[tuple[int, str]]:
    """The headings the chunker cuts at."""
    return [(s.level, s.heading) for s in find_sections(doc) if s.level]


def line_count(data: bytes) -> int:
    return data.count(b"\n") + (bool(data) and not data.endswith(b"\n"))


def assert_spans_exact(data: bytes, chunks) -> None:
    """Every section chunk cuts the file's bytes, and its lines are lines of the file."""
    for c in chunks:
        if c.kind == "section":
            assert data[c.byte_start : c.byte_end].decode("utf-8", "replace") == c.text
        assert data[: c.byte_start].count(b"\n") + 1 == c.line_start
        assert data[: c.byte_end].count(b"\n") + 1 == c.line_end
        assert 1 <= c.line_start <= c.line_end <= line_count(data)


# -- the CommonMark spec's examples ----------------------------------------------------------


def spec_examples() -> list[dict]:
    """The spec's examples as its own npm package extracts them (commonmark-spec, installed
    by the README's test command next to StyLua)."""
    node = tool("node")
    if node is None:
        missing("commonmark", "node is not installed: the spec's examples come from npm")
    if not (SPEC_PACKAGE / "index.js").is_file():
        missing("commonmark", f"commonmark-spec is not in {SPEC_PACKAGE.parent} (npm install)")
    out = subprocess.run(
        [node, "-e", "process.stdout.write(JSON.stringify(require(process.argv[1]).tests))",
         str(SPEC_PACKAGE)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    examples = json.loads(out)
    for ex in examples:  # the spec writes a tab as →; its own test runner swaps them back
        ex["markdown"] = ex["markdown"].replace("→", "\t")
        ex["html"] = ex["html"].replace("→", "\t")
    return examples


class TopLevelHeadings(HTMLParser):
    """The `<h1>`…`<h6>` of an HTML page that are not inside a list or a block quote, with
    their text as a browser shows it (tags dropped, entities decoded)."""

    CONTAINERS = frozenset({"blockquote", "li", "ul", "ol"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.current: tuple[int, list[str]] | None = None
        self.found: list[tuple[int, str]] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.CONTAINERS:
            self.depth += 1
        elif re.fullmatch(r"h[1-6]", tag) and not self.depth and self.current is None:
            self.current = (int(tag[1]), [])

    def handle_endtag(self, tag):
        if tag in self.CONTAINERS:
            self.depth -= 1
        elif self.current and tag == f"h{self.current[0]}":
            self.found.append((self.current[0], " ".join("".join(self.current[1]).split())))
            self.current = None

    def handle_data(self, data):
        if self.current is not None:
            self.current[1].append(data)


def reference_headings(html: str) -> list[tuple[int, str]]:
    reader = TopLevelHeadings()
    reader.feed(html)
    reader.close()
    return reader.found


def test_every_spec_example_is_sectioned_as_the_spec_renders_it():
    examples = spec_examples()
    assert len(examples) >= 650
    chunker = Chunker()
    wrong, front_matter = [], []
    for ex in examples:
        data = ex["markdown"].encode()
        doc = parse_document(data, "spec.md")
        expected = reference_headings(ex["html"])
        if doc.body_line:
            # YAML front matter is an extension: a `---` … `---` pair on the first line is
            # metadata, not a rule and a setext heading. After it, the spec's reading stands.
            front_matter.append(ex["number"])
            assert doc.lines[0] == "---" and doc.lines[doc.body_line - 1] in ("---", "...")
            expected = expected[len(expected) - len(sections(doc)) :]
        if sections(doc) != expected:
            wrong.append((ex["number"], sections(doc), expected))
        assert_spans_exact(doc.data, chunker.chunk(doc))
        assert all(b.start < b.end for b in doc.blocks), ex["number"]
    assert not wrong, wrong
    # spec 0.31.2: 35 examples have top-level headings (40 have any), 652 examples in all
    assert sum(1 for ex in examples if reference_headings(ex["html"])) >= 35
    assert len(front_matter) <= 3, front_matter  # only examples that open with `---`


# -- what the hand-written scanner got wrong --------------------------------------------------


def test_a_fence_inside_an_html_comment_does_not_swallow_the_file():
    doc = parse(
        """
        # Title

        <!-- an example, commented out:
        ```yaml
        old: config
        -->

        ## After the comment

        text

        ## Another

        more
        """
    )
    assert sections(doc) == [(1, "Title"), (2, "After the comment"), (2, "Another")]
    assert not any(doc.code)
    crumbs = [c.breadcrumb for c in Chunker().chunk(doc)]
    assert crumbs == ["Title", "Title › After the comment", "Title › Another"]


def test_a_tab_indented_closing_fence_in_a_list_item_closes_it():
    data = b"# T\n\n1. Build it\n\n   ```bash\n   make\n\t```\n\n## Next\n\ntext\n"
    doc = parse_document(data, "doc.md")
    assert sections(doc) == [(1, "T"), (2, "Next")]
    assert [i for i, flag in enumerate(doc.code) if flag] == [4, 5, 6]  # the fence, no more


def test_hash_lines_in_html_blocks_and_comments_are_text():
    doc = parse(
        """
        # T

        <details>
        # Not a heading
        </details>

        <!--
        ## Not one either
        -->

        ## Real
        """
    )
    assert sections(doc) == [(1, "T"), (2, "Real")]
    chunks = Chunker().chunk(doc)
    assert "# Not a heading" in chunks[0].text and "## Not one either" in chunks[0].text
    assert [i for i, flag in enumerate(doc.html) if flag] == [2, 3, 4, 6, 7, 8]


def test_setext_headings_are_sections():
    doc = parse(
        """
        Guide
        =====

        intro

        Install
        -------

        run it

        Two-line
        heading text
        ------------

        body
        """
    )
    assert sections(doc) == [(1, "Guide"), (2, "Install"), (2, "Two-line heading text")]
    assert doc.title == "Guide"
    assert [(h.line, h.end) for h in doc.headings] == [(0, 2), (5, 7), (10, 13)]


def test_a_rule_under_a_blank_line_is_not_a_setext_heading():
    doc = parse("# T\n\nparagraph\n\n---\n\nmore\n")
    assert sections(doc) == [(1, "T")]


def test_heading_text_keeps_the_words_a_reader_sees():
    doc = parse(
        """
        # The `--force` flag

        ## The `**` operator and `__init__`

        ## Use *SQLite* with [WAL mode](wal.md) and **care**

        ## <a name="anchor"></a>Anchored ![logo](logo.png) heading

        ## \\#hashtag &amp; entities

        ## See [[Other Note]] and [[Packed Circles|dendron://vault/dendron.topic.circles]]

        ## Obsidian [[folder/note|Shown Label]]
        """
    )
    assert [h.text for h in doc.headings] == [
        "The --force flag",
        "The ** operator and __init__",
        "Use SQLite with WAL mode and care",
        "Anchored heading",
        "#hashtag & entities",
        "See Other Note and Packed Circles",
        "Obsidian Shown Label",
    ]
    assert doc.title == "The --force flag"


def test_a_heading_with_code_is_found_by_lookup_and_in_breadcrumbs(rpc, vault):
    write(vault, "cli.md", "# CLI\n\n## The `--force` flag\n\nOverwrites without asking.\n")
    doc = parse_document((vault / "cli.md").read_bytes(), "cli.md")
    assert "The --force flag" in names.document_symbols(doc)
    lexical_workspace(rpc, vault)
    found = rpc.call("search.find", ["v", "The --force flag"])["matches"]
    assert (found[0]["match"], found[0]["kind"], found[0]["line"]) == ("exact", "heading", 3)
    assert found[0]["breadcrumb"] == "CLI › The --force flag"
    partial = rpc.call("search.find", ["v", "force flag"])["matches"]
    assert partial and partial[0]["name"] == "The --force flag"


def test_line_end_never_passes_the_last_line():
    for text in ("# T\n\n```\ncode\n", "# T\n\n```\ncode", "# T\n\ntext\n\n\n", "# T\n    code\n"):
        data = text.encode()
        chunks = Chunker().chunk(parse_document(data, "doc.md"))
        assert chunks, text
        assert chunks[-1].line_end == len(text.rstrip("\n").split("\n")), text
        assert_spans_exact(data, chunks)


def test_headings_in_quotes_lists_and_footnotes_stay_in_their_section():
    doc = parse(
        """
        # T

        > ## Quoted heading
        > text

        - ## Item heading
          text

        Note.[^1]

        [^1]: ## Footnote heading
        """
    )
    assert sections(doc) == [(1, "T")]
    chunks = Chunker().chunk(doc)
    assert len(chunks) == 1 and "## Item heading" in chunks[0].text


def test_front_matter_is_the_parsers_block():
    doc = parse("---\ntitle: Meta\ntags: [a]\n...\n# Body\n")
    assert doc.body_line == 4 and doc.meta == {"title": "Meta", "tags": ["a"]}
    assert doc.title == "Meta" and doc.tags == ["a"]
    late = parse("# T\n\n---\ntitle: no\n---\n")
    assert late.body_line == 0 and late.meta == {}
    bom = parse_document("\ufeff---\ntitle: Bom\n---\n# T\n\ntext\n".encode(), "b.md")
    assert bom.meta == {"title": "Bom"} and sections(bom) == [(1, "T")]
    assert_spans_exact(bom.data, Chunker().chunk(bom))


def test_a_dash_pair_after_the_top_is_not_front_matter():
    # cometbft's ADR 075: a rule, then headings, then a `---` under a paragraph; the parser's
    # metadata extension would take all of it for YAML if it read past the first line.
    doc = parse(
        """
        ---
        title: Top
        ---
        # ADR 075

        ## Changelog

        - 01-Mar-2022: Update.

        ---
        ## Status

        Accepted

        ---

        ## Context

        text
        """
    )
    assert doc.meta == {"title": "Top"} and doc.body_line == 3
    assert sections(doc) == [(1, "ADR 075"), (2, "Changelog"), (2, "Status"), (2, "Context")]
    assert not any(b.kind == "MetadataBlock" for b in doc.blocks)


def test_invalid_utf8_keeps_offsets_and_structure():
    data = b"# Bad \xff byte\n\ntext \x80\n\n## Next\n\nmore \xe2\x82\n"
    doc = parse_document(data, "bad.md")
    assert [h.text for h in doc.headings] == ["Bad ? byte", "Next"]
    assert doc.problems and "invalid UTF-8" in doc.problems[0]
    assert_spans_exact(data, Chunker().chunk(doc))


def test_tags_and_links_are_read_only_where_a_reader_sees_prose():
    doc = parse(
        """
        # T

        Visible #visible and [[Seen]] [seen](seen.md).

            indented code #indented [[Indented]]

        <div style="color: #fff">
        [[InHtml]] #inhtml
        </div>

        <!-- #commented [[Commented]] -->

        - nested list
            - four spaces in #nested [[Nested]]
        """
    )
    assert doc.tags == ["visible", "nested"]
    assert [ln.target for ln in doc.links] == ["Seen", "seen.md", "Nested"]
    runs = list(prose_runs(doc, bytes(map(operator.or_, doc.code, doc.html))))
    prose = {first + k for first, text in runs for k in range(text.count("\n") + 1)}
    assert prose == set(range(len(doc.lines))) - {4, 6, 7, 8, 10}


# -- splitting long sections between blocks --------------------------------------------------


def test_a_long_list_is_split_between_items_not_inside_one():
    item = "word " * 30  # an item is two paragraphs of ~40 tokens; two items do not fit
    items = "\n\n".join(f"- Item {i} {item}\n\n  Second paragraph of {i} {item}" for i in range(6))
    data = f"# T\n\n{items}\n".encode()
    chunks = Chunker(150).chunk(parse_document(data, "doc.md"))
    assert len(chunks) > 2
    for c in chunks:
        assert c.text.startswith(("# T", "- Item")), c.text[:40]
        assert c.text.rstrip().endswith(item.strip()), c.text[-40:]
        assert c.text.count("- Item") == c.text.count("Second paragraph")  # whole items
    assert_spans_exact(data, chunks)


def test_an_item_over_the_budget_is_split_between_its_blocks():
    para = "word " * 100
    data = f"# T\n\n- Item\n\n  {para}\n\n  {para}\n\n  {para}\n".encode()
    chunks = Chunker(150).chunk(parse_document(data, "doc.md"))
    assert len(chunks) == 3
    assert all(estimate_tokens(c.text) <= 150 for c in chunks)
    assert all(c.text.rstrip().endswith("word") for c in chunks)  # never mid-paragraph
    assert_spans_exact(data, chunks)


def test_a_table_that_fits_is_never_split():
    intro = "Intro " + "word " * 100
    rows = "\n".join(f"| key {i} | value {i} with a few words |" for i in range(15))
    data = f"# T\n\n{intro}\n\n| key | value |\n|---|---|\n{rows}\n\nOutro.\n".encode()
    chunks = Chunker(200).chunk(parse_document(data, "doc.md"))
    tables = [c for c in chunks if "|---|" in c.text]
    assert len(tables) == 1 and tables[0].text.count("| key ") == 16
    assert_spans_exact(data, chunks)


def test_a_table_over_the_budget_is_split_between_rows_keeping_the_delimiter():
    rows = "\n".join(f"| key {i} | value {i} with a few more words |" for i in range(60))
    data = f"# T\n\n| key | value |\n|---|---|\n{rows}\n".encode()
    chunks = Chunker(200).chunk(parse_document(data, "doc.md"))
    assert len(chunks) > 2 and "|---|---|" in chunks[0].text
    assert all(c.text.startswith(("# T", "| key")) for c in chunks)
    body = "\n".join(c.text for c in chunks)
    assert body.count("| key ") == 61  # no row lost at a cut
    assert_spans_exact(data, chunks)


def test_an_indented_code_block_with_blank_lines_stays_whole():
    code = "\n\n".join(f"    line {i} " + "x" * 40 for i in range(8))
    intro = "intro " + "word " * 80  # with the code block it is over the budget
    data = f"# T\n\n{intro}\n\n{code}\n\noutro\n".encode()
    doc = parse_document(data, "doc.md")
    chunks = Chunker(200).chunk(doc)
    assert [c for c in chunks if "line 0" in c.text] == [c for c in chunks if "line 7" in c.text]
    assert_spans_exact(data, chunks)


def test_deep_nesting_is_chunked_without_recursion():
    quotes = "".join(">" * k + f" level {k}\n" for k in range(1, 2001))
    lists = "".join("  " * k + f"- level {k}\n" for k in range(2000))
    for text in (quotes, lists):
        data = text.encode()
        chunks = Chunker().chunk(parse_document(data, "deep.md"))
        assert chunks and chunks[-1].line_end == 2000
        assert_spans_exact(data, chunks[:20] + chunks[-20:])


# -- re-reading a store written before this parser ------------------------------------------


def test_a_store_cut_by_the_old_scanner_is_read_again_once_keeping_unchanged_chunks(rpc, vault):
    write(vault, "a.md", "# Alpha\n\n## One\n\ntext one\n\n## Two\n\ntext two\n")
    write(vault, "b.md", "---\ntitle: Beta\n---\n# Beta\n\nbody <!-- ``` --> here\n")
    lexical_workspace(rpc, vault)
    query = "SELECT id, text_hash FROM chunks WHERE state = 1 ORDER BY id"
    with rpc.engine.store.transaction() as conn:  # as the hand-written scanner's version left it
        before = conn.execute(query).fetchall()
        fp = conn.execute("SELECT chunk_fp FROM documents LIMIT 1").fetchone()[0]
        assert STRUCTURE_FORMAT in fp
        conn.execute("UPDATE documents SET chunk_fp = ?", (fp.replace(f",{STRUCTURE_FORMAT}", ""),))
    summary = rpc.call("index.run", ["v"])
    assert summary["modified"] == 2 and summary["chunks_written"] == 0
    with rpc.engine.store.snapshot() as conn:
        assert [tuple(r) for r in conn.execute(query)] == [tuple(r) for r in before]
    assert rpc.call("index.run", ["v"])["unchanged"] == 2


# -- the shared corpora ------------------------------------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["adr", "dendron-site", "cpp-docs"])
def test_every_chunk_of_the_corpora_cuts_its_file_exactly(name):
    if name == "cpp-docs" and not LONG:
        pytest.skip("9.7k files: AUTODOC_LONG=1")
    root = corpus(name)
    chunker = Chunker()
    files = sections_seen = 0
    for path in sorted(root.rglob("*.md")):
        data = path.read_bytes()
        doc = parse_document(data, path.name)
        sections_seen += len(doc.headings)
        assert_spans_exact(data, chunker.chunk(doc))
        files += 1
    assert files > 500 and sections_seen > 5000


def test_ten_thousand_links_on_a_line_are_read_in_linear_time():
    # Each link's line was cut out of its run again (quadratic): seconds, not 0.13 s.
    line = " ".join(f"[[n{i}]]" for i in range(10_000))
    md = " ".join(f"[l{i}](n{i}.md)" for i in range(10_000))
    data = f"# Links\n\nSuperseded by {line}\n{md}\n".encode()
    started = time.perf_counter()
    doc = parse_document(data, "bomb.md")
    assert time.perf_counter() - started < limits.LINK_BOMB_PARSE_S
    assert len(doc.links) == 20_000
    assert {ln.relation for ln in doc.links if ln.kind == "wiki"} == {"superseded_by"}
    assert {ln.relation for ln in doc.links if ln.kind == "md"} == {""}


# -- the parser's blocks, exactly (mutation testing's survivors, doc/testing.md) -------------


def test_blocks_with_their_depth_and_lines():
    data = b"# T\n\npara\n\n- a\n- b\n\n---\n\n> q\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n    code\n"
    doc = parse_document(data, "doc.md")
    assert [tuple(b) for b in doc.blocks] == [
        ("Heading", 0, 0, 1),
        ("Paragraph", 0, 2, 3),
        ("List", 0, 4, 7),  # a list and its last item end after the blank line below them
        ("Item", 1, 4, 5),
        ("Item", 1, 5, 7),
        ("Rule", 0, 7, 8),
        ("BlockQuote", 0, 9, 10),
        ("Paragraph", 1, 9, 10),
        ("Table", 0, 11, 14),
        ("TableHead", 1, 11, 12),
        ("TableRow", 1, 13, 14),
        ("CodeBlock", 0, 15, 16),
    ]
    assert doc.top_blocks == [0, 1, 2, 5, 6, 8, 11]
    assert [i for i, flag in enumerate(doc.code) if flag] == [15]
    chunk = Chunker().chunk(doc)[0]
    assert chunk.text.endswith("    code") and "---" in chunk.text


def test_a_rule_closing_a_section_stays_in_its_chunk():
    doc = parse("# A\n\ntext\n\n---\n\n## B\n\nmore\n")
    assert [c.text for c in Chunker().chunk(doc)] == ["# A\n\ntext\n\n---", "## B\n\nmore"]


def test_front_matter_edge_cases():
    unterminated = parse("---\ntitle: x\nno end\n")
    assert unterminated.meta == {} and unterminated.body_line == 0
    assert Chunker().chunk(unterminated)  # its lines are text
    only = parse_document(b"---\ntitle: Only\n---", "only.md")  # no line end after it
    assert only.meta == {"title": "Only"} and only.body_line == 3
    assert only.blocks == [] and Chunker().chunk(only) == []


def test_the_last_line_counts_even_without_a_line_end():
    data = b"# T\n\nword\nz"
    chunks = Chunker().chunk(parse_document(data, "doc.md"))
    assert chunks[-1].text.endswith("word\nz") and chunks[-1].line_end == 4


def test_a_bom_does_not_shift_a_block_onto_the_next_line():
    doc = parse_document("\ufeff# T\ntext #tag\n## U\nmore\n".encode(), "bom.md")
    assert [(h.line, h.end) for h in doc.headings] == [(0, 1), (2, 3)]
    assert doc.tags == ["tag"]  # the line under the heading is prose, not heading


def test_heading_text_edge_cases():
    doc = parse(
        """
        ## [[note|Shown Label]]

        ## [[note|Shown `code` Label]]

        ## Logo ![outer ![inner](i.png) tail](o.png) end

        ## Read [setup.py](install)

        Two\\
        lines
        =====
        """
    )
    assert [h.text for h in doc.headings] == [
        "Shown Label",  # Obsidian order, the target not path-like
        "Shown code Label",
        "Logo end",  # no alt text, even of an image inside an image
        "Read setup.py",  # a link shows its text, whatever the text looks like
        "Two lines",  # a hard break is a space
    ]
