"""Heading-scoped chunking: boundaries, breadcrumbs, budgets and exact spans."""

from __future__ import annotations

import textwrap

from autodoc.chunking import Chunker, estimate_tokens
from autodoc.document import parse_document


def chunks_of(text: str, tokens: int = 350, abstract: bool = True, path: str = "doc.md"):
    data = textwrap.dedent(text).lstrip("\n").encode()
    return data, Chunker(tokens, abstract).chunk(parse_document(data, path))


def assert_spans_exact(data: bytes, chunks) -> None:
    for c in chunks:
        if c.kind != "section":
            continue
        assert data[c.byte_start : c.byte_end].decode("utf-8", "replace") == c.text
        assert data[: c.byte_start].count(b"\n") + 1 == c.line_start
        assert data[: c.byte_end].count(b"\n") + 1 == c.line_end


def test_split_at_atx_and_setext_headings_with_breadcrumbs():
    data, chunks = chunks_of(
        """
        # Guide

        Intro text.

        ## Install

        Run the installer.

        ### On Linux

        Use the package.

        Usage
        -----

        Call it.

        Other Title
        ===========

        Top level again.
        """
    )
    crumbs = [c.breadcrumb for c in chunks]
    assert crumbs == [
        "Guide",
        "Guide › Install",
        "Guide › Install › On Linux",
        "Guide › Usage",
        "Guide › Other Title",
    ]
    assert_spans_exact(data, chunks)


def test_hash_inside_code_fence_is_not_a_heading():
    data, chunks = chunks_of(
        """
        # Title

        ```bash
        # not a heading
        echo hi
        ```

        ~~~~
        ## also not a heading
        ~~~~

        ## Real
        text
        """
    )
    assert [c.breadcrumb for c in chunks] == ["Title", "Title › Real"]
    assert "# not a heading" in chunks[0].text
    assert "## also not a heading" in chunks[0].text
    assert_spans_exact(data, chunks)


def test_frontmatter_title_and_offsets_include_frontmatter():
    data, chunks = chunks_of(
        """
        ---
        title: "ADR 7: Storage"
        abstract: We store everything in one file.
        ---
        # ADR 7: Storage

        Body.
        """
    )
    assert chunks[0].kind == "abstract"
    assert chunks[0].text == "We store everything in one file."
    assert chunks[0].line_start == 1 and chunks[0].line_end == 4
    section = chunks[1]
    assert section.breadcrumb == "ADR 7: Storage"  # the H1 repeating the title is not doubled
    assert section.line_start == 5
    assert_spans_exact(data, chunks)


def test_abstract_chunk_can_be_turned_off():
    _, chunks = chunks_of("---\nabstract: hello\n---\n# T\n\nx\n", abstract=False)
    assert [c.kind for c in chunks] == ["section"]


def test_small_sections_stay_whole_and_oversized_split_at_paragraphs():
    paragraphs = "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(12))
    data, chunks = chunks_of(f"# Big\n\n## Part\n\n{paragraphs}\n\n## Small\n\nshort\n", tokens=200)
    part = [c for c in chunks if c.breadcrumb == "Big › Part"]
    assert len(part) > 1
    for c in part:
        assert estimate_tokens(c.text) <= 200
        # every piece starts at a paragraph (or the heading), never mid-paragraph
        assert c.text.startswith(("## Part", "Paragraph"))
    small = [c for c in chunks if c.breadcrumb == "Big › Small"]
    assert len(small) == 1 and small[0].text == "## Small\n\nshort"
    assert_spans_exact(data, chunks)


def test_code_fence_is_not_split_unless_alone_over_budget():
    fence = "```\n" + "\n\n".join(f"line {i} " + "x" * 40 for i in range(10)) + "\n```"
    data, chunks = chunks_of(f"# T\n\nintro\n\n{fence}\n\noutro\n", tokens=200)
    with_fence = [c for c in chunks if "```" in c.text]
    assert len(with_fence) == 1  # the fence fits the budget: one piece, blank lines inside kept
    assert with_fence[0].text.count("```") == 2
    huge = "```\n" + "\n".join("y" * 70 for _ in range(60)) + "\n```"
    data, chunks = chunks_of(f"# T\n\n{huge}\n", tokens=100)
    assert len(chunks) > 1
    assert all(estimate_tokens(c.text) <= 100 for c in chunks)
    assert_spans_exact(data, chunks)


def test_single_huge_line_is_cut_on_character_boundaries():
    line = ("héllo wörld " * 20000).strip()
    data, chunks = chunks_of(f"# T\n\n{line}\n", tokens=100)
    assert len(chunks) > 10
    assert all(c.line_start == c.line_end == 3 for c in chunks[1:])
    assert_spans_exact(data, chunks)


def test_crlf_and_unicode_spans():
    data = "# Tïtle\r\n\r\nCafé au lait\r\n\r\n## Sëction\r\nmore ☕ text\r\n".encode()
    chunks = Chunker().chunk(parse_document(data, "x.md"))
    assert [c.breadcrumb for c in chunks] == ["Tïtle", "Tïtle › Sëction"]
    assert_spans_exact(data, chunks)
    assert chunks[1].text == "## Sëction\r\nmore ☕ text"


def test_heading_only_parent_is_folded_into_children():
    _, chunks = chunks_of("# A\n## B\n### C\ntext\n")
    assert [c.breadcrumb for c in chunks] == ["A › B › C"]


def test_text_hash_changes_with_breadcrumb_and_text():
    _, a = chunks_of("# A\n\n## S\nsame\n")
    _, b = chunks_of("# B\n\n## S\nsame\n")
    assert a[-1].text == b[-1].text and a[-1].text_hash != b[-1].text_hash


def test_no_headings_title_from_file_name():
    _, chunks = chunks_of("just some text\n", path="notes/plain-note.md")
    assert chunks[0].breadcrumb == "plain-note"


def test_ten_thousand_headings():
    text = "".join(f"## H{i}\nbody {i}\n" for i in range(10_000))
    data, chunks = chunks_of(text)
    assert len(chunks) == 10_000
    assert_spans_exact(data, chunks[:50] + chunks[-50:])
