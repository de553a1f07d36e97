"""Heading-scoped chunking: boundaries, breadcrumbs, budgets and exact spans."""

from __future__ import annotations

import itertools
import textwrap

import pytest

from autodoc.parse.chunking import Chunker, estimate_tokens, is_stub
from autodoc.parse.document import parse_document


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


# -- exact packing (mutation testing's survivors, doc/testing.md) ---------------------------


def spans(data: bytes, tokens: int) -> list[tuple[int, int]]:
    chunks = Chunker(tokens).chunk(parse_document(data, "doc.md"))
    assert_spans_exact(data, chunks)
    starts = [c.byte_start for c in chunks]
    assert starts == sorted(starts)
    assert all(c.text == c.text.strip("\r\n") for c in chunks)  # no blank line at an edge
    assert all(a.byte_end < b.byte_start for a, b in itertools.pairwise(chunks))
    return [(c.line_start, c.line_end) for c in chunks]


def test_estimate_tokens_rounds_up():
    assert [estimate_tokens("x" * n) for n in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]


def test_paragraphs_are_packed_greedily_up_to_the_budget():
    paras = "\n\n".join(f"P{i:02d} " + "x" * 86 for i in range(10))  # 90 bytes each
    data = f"# T\n\n{paras}\n".encode()
    assert spans(data, 100) == [(1, 9), (11, 17), (19, 21)]  # 4 + 4 + 2 paragraphs


def test_a_long_list_is_cut_between_items_and_its_neighbours_packed_with_it():
    items = "\n".join(f"- item {i} " + "y" * 140 for i in range(6))
    data = f"# T\n\nintro\n\n{items}\n\nafter\n".encode()
    assert spans(data, 100) == [(1, 6), (7, 8), (9, 12)]


def test_an_item_over_the_budget_is_cut_between_its_sub_items():
    sub = "\n".join(f"  - sub {i} " + "z" * 100 for i in range(5))
    data = ("# T\n\n- top item\n" + sub + "\n- second " + "w" * 50 + "\n").encode()
    assert spans(data, 100) == [(1, 6), (7, 9)]


def test_an_oversized_code_block_is_cut_between_lines_and_loses_none():
    code = "\n".join("" if i % 4 == 3 else f"line {i:02d} " + "c" * 60 for i in range(24))
    data = f"# T\n\nintro words\n\n```\n{code}\n```\n\n## Next\n\nafter\n".encode()
    chunks = Chunker(100).chunk(parse_document(data, "doc.md"))
    spans(data, 100)
    covered = {n for c in chunks for n in range(c.line_start, c.line_end + 1)}
    text_lines = {n for n, line in enumerate(data.decode().split("\n"), 1) if line.strip()}
    assert text_lines <= covered
    assert len(chunks) >= 4 and all(estimate_tokens(c.text) <= 100 for c in chunks)


def test_a_section_of_exactly_the_budget_is_one_chunk():
    head = "# T\n\n"
    body = "w" * (400 - len(head))
    for data in ((head + body).encode(), (head + body[:190] + "\n\n" + body[192:]).encode()):
        assert len(data) == 400
        assert spans(data, 100) == [(1, data.count(b"\n") + 1)]


def test_a_long_line_is_cut_after_a_space_on_character_boundaries():
    words = " ".join(f"wörd{i:05d}" for i in range(400))  # 11 bytes a word: 400 cuts one
    data = f"# T\n\n{words}\n".encode()
    chunks = Chunker(100).chunk(parse_document(data, "doc.md"))[1:]
    assert len(chunks) > 5
    for c in chunks[:-1]:
        raw = data[c.byte_start : c.byte_end]
        assert raw.endswith(b" ") and 200 < len(raw) <= 400
        assert "\ufffd" not in c.text
    joined = b"".join(data[c.byte_start : c.byte_end] for c in chunks)
    assert joined == words.encode()
    for shift in range(5):  # no space, 2- and 3-byte characters, every alignment of the cut
        solid = "a" * shift + "é€" * 350
        data = f"# T\n\n{solid}\n".encode()
        pieces = Chunker(100).chunk(parse_document(data, "doc.md"))[1:]
        assert all("\ufffd" not in c.text and len(c.text.encode()) <= 400 for c in pieces)
        assert "".join(c.text for c in pieces) == solid


def test_the_abstract_chunk_is_the_front_matter_block():
    text = "---\ntitle: Seven\nabstract: One file holds everything.\n---\n# Seven\n\nBody.\n"
    data = text.encode()
    chunks = Chunker().chunk(parse_document(data, "doc.md"))
    a = chunks[0]
    assert (a.kind, a.ordinal, a.breadcrumb) == ("abstract", 0, "Seven › Abstract")
    assert (a.byte_start, a.byte_end, a.line_start, a.line_end) == (0, text.index("\n# "), 1, 4)
    assert [c.ordinal for c in chunks] == [0, 1]


def test_an_oversized_first_block_takes_nothing_from_before_it():
    code = "\n".join(f"line {i:02d} " + "c" * 60 for i in range(12))
    data = f"---\ntitle: Front\n---\n```\n{code}\n```\n".encode()
    assert spans(data, 100) == [(4, 9), (10, 14), (15, 17)]  # not the front matter


def test_an_oversized_item_does_not_end_its_lists_split():
    item = "- first " + "a" * 190 + "\n  " + "b" * 198 + "\n  " + "c" * 198
    data = f"# T\n\n{item}\n- second item\n- third item\n".encode()
    assert spans(data, 100) == [(1, 3), (4, 4), (5, 7)]  # the items after it are kept


@pytest.mark.parametrize("space_at", [50, 150])
def test_a_space_early_in_the_window_is_not_used_for_a_cut(space_at):
    # Cutting there would leave a sliver: a space counts only in the second half of the budget.
    line = "a" * space_at + " " + "b" * 900
    data = f"# T\n\n{line}\n".encode()
    pieces = Chunker(100).chunk(parse_document(data, "doc.md"))[1:]
    assert [len(c.text) for c in pieces] == [400, 400, len(line) - 800]


def test_a_piece_that_fits_at_the_end_of_a_line_is_not_cut_again():
    line = "x" * 399 + " " + "x" * 399 + " " + "y" * 200 + " " + "z" * 199
    data = f"# T\n\n{line}\n".encode()
    pieces = Chunker(100).chunk(parse_document(data, "doc.md"))[1:]
    assert [len(c.text) for c in pieces] == [400, 400, 400]


def test_invalid_utf8_without_character_starts_is_cut_at_the_budget():
    data = b"# T\n\n" + b"\x80" * 1000 + b"\n"
    pieces = Chunker(100).chunk(parse_document(data, "doc.md"))[1:]
    assert [c.byte_end - c.byte_start for c in pieces] == [400, 400, 200]


def test_units_that_make_exactly_the_budget_are_one_chunk():
    data = ("```\n" + "a" * 396 + "\n" + "b" * 300 + "\n```\n").encode()  # over: cut by lines
    assert spans(data, 100) == [(1, 2), (3, 4)]  # fence + first line is 400 bytes: together


# -- stub sections: metadata only, merged into the section after them ----------------------

ADR = """
    # 7. Use Kafka

    Date: 2019-01-08

    ## Status

    Accepted

    ## Context

    We need a durable log between the billing and ledger services.

    ## Decision

    We use Kafka, because it keeps ordered partitions.
    """


def test_stub_sections_merge_forward_into_the_section_that_answers():
    data, chunks = chunks_of(ADR)
    assert_spans_exact(data, chunks)
    # The first chunk holds the text under the title (the date), the status and the context:
    # the section that holds all of it is the title's, so that is its label (issue 55: it was
    # `7. Use Kafka › Context`, a label the date and the status do not sit under).
    assert [c.breadcrumb for c in chunks] == ["7. Use Kafka", "7. Use Kafka › Decision"]
    first = chunks[0]
    # the title, the date and the status stay in the text: they are what the stub said
    assert first.text.startswith("# 7. Use Kafka\n\nDate: 2019-01-08\n\n## Status\n\nAccepted")
    assert "durable log" in first.text and first.line_start == 1
    assert "Kafka, because" not in first.text
    # The row's line is the heading its label ends with; the headings the span holds are all
    # named, so the stubs' stay visible.
    assert first.line == 1 and first.headings == [
        (1, "7. Use Kafka"),
        (5, "Status"),
        (9, "Context"),
    ]
    assert (chunks[1].line, chunks[1].headings) == (chunks[1].line_start, [(13, "Decision")])


def test_a_stub_merged_into_a_sibling_is_named_in_the_label():
    """No section holds both a `## Status` stub and the `## Context` it joins but the title's,
    which has no text of its own here: the label lists both after it, and the row's line is
    the heading of the section that answers, the one the stub joined."""
    data, chunks = chunks_of(ADR.replace("Date: 2019-01-08\n\n    ", ""))
    assert_spans_exact(data, chunks)
    assert [c.breadcrumb for c in chunks] == [
        "7. Use Kafka › Status · Context",
        "7. Use Kafka › Decision",
    ]
    assert chunks[0].line == 7 and chunks[0].text.startswith("## Status\n\nAccepted\n\n## Context")


def test_trailing_stubs_merge_back_into_the_last_section():
    data, chunks = chunks_of(
        """
        # Guide

        Install it with the package manager.

        ## Tags

        - infrastructure

        ## References

        - [Kafka docs](https://kafka.apache.org/)
        """
    )
    assert_spans_exact(data, chunks)
    assert len(chunks) == 1 and chunks[0].breadcrumb == "Guide"
    assert chunks[0].text.rstrip().endswith("(https://kafka.apache.org/)")
    assert chunks[0].line == 1  # merged back: the labelled heading comes first
    assert chunks[0].headings == [(1, "Guide"), (5, "Tags"), (9, "References")]


def test_a_document_of_metadata_only_keeps_its_chunks_under_the_first_stubs_crumb():
    text = """
        # Note

        | Metadata | Value      |
        |----------|------------|
        | Date     | 2021-08-11 |

        ## Status

        Deprecated
        """
    data, chunks = chunks_of(text)
    assert len(chunks) == 1 and chunks[0].breadcrumb == "Note"
    assert "2021-08-11" in chunks[0].text and "Deprecated" in chunks[0].text
    data, small = chunks_of(text, tokens=10)  # over the budget: cut like any section
    assert_spans_exact(data, small)
    # each piece labelled by the section its text is under
    assert len(small) > 1 and [c.breadcrumb for c in small][-1] == "Note › Status"
    assert {c.breadcrumb for c in small if "Deprecated" not in c.text} == {"Note"}
    # a piece after the first does not hold the heading: it is shown at its own first line
    assert small[0].line == 1 and all(c.line == c.line_start for c in small[1:])
    assert [h for c in small for h in c.headings] == [(1, "Note"), (7, "Status")]


def test_text_before_the_first_heading_is_a_stub_only_if_all_of_it_is_metadata():
    _, chunks = chunks_of("Some prose before the title.\n\nDate: 2019-01-08\n\n# T\n\nBody.\n")
    assert [c.text.split("\n")[0] for c in chunks] == ["Some prose before the title.", "# T"]
    _, chunks = chunks_of("Date: 2019-01-08\n\n# T\n\nBody.\n")
    assert len(chunks) == 1 and chunks[0].text.startswith("Date: 2019-01-08")


@pytest.mark.parametrize(
    ("heading", "body"),
    [
        ("Status", "✅ Accepted"),
        ("Status", "Superseded by [ADR 9](0009-use-x.md)"),
        ("Changelog", "- 2020-04-02: Initial draft\n- April 19, 2021: Second draft (@alex)"),
        ("Participants", "- Ada Lovelace\n- Grace Hopper"),
        ("Use Kafka", "**Date:** 2019-01-08\n**Deciders:** Ada, Grace"),
        ("Use Kafka", "| Metadata | Value |\n|---|---|\n| Author | @ada |\n| Tags | infra |"),
        ("Screenshot", "![the picker](img/picker.png)"),
        ("Use Kafka", "| **Author** | @ada |\n| __Status__ | Accepted |"),  # bold keys
        ("Use Kafka", "__Date__: 2019-01-08\n**Superseded by**: [ADR 9](0009-x.md)"),
        ("Status", "Rejected in favour of ADR 111"),  # six words: still a status
        ("Changelog", "\n".join(f"- 2020-01-{n:02}: draft" for n in range(1, 13))),  # 12 lines
        ("Tags", "- " + "x" * 598),  # 600 bytes
        ("See also", "[Message Maps](message-maps.md)"),
    ],
)
def test_metadata_bodies_are_stubs(heading, body):
    assert is_stub(body.splitlines(), heading)


@pytest.mark.parametrize(
    ("heading", "body"),
    [
        # a config field's description under a heading named like metadata
        ("author", "Name of person or organization doing the publishing\n- eg: `Kevin`"),
        ("Decision Outcome", 'Chosen option: "Gradle", because it is lean.'),
        ("Consequences", "The frontend load balancer can be removed."),
        ("Options", "| Flag | Meaning |\n|---|---|\n| /O1 | small code |"),
        ("Status", "\n".join(f"- line {n}" for n in range(13))),  # too long to be a stub
        ("Tags", "- " + "x" * 599),  # 601 bytes
        ("Status", "Rejected in favour of ADR 111 and 112"),  # a sentence
        ("Deadline", "    ADR76_DEADLINE: 2022-10-05T00:00:00Z"),
        ("Empty", ""),
    ],
)
def test_content_is_not_a_stub(heading, body):
    assert not is_stub(body.splitlines(), heading)


def test_a_stub_bigger_than_the_budget_splits_like_any_section():
    body = "\n".join(f"Date: 2019-01-{n:02}" for n in range(1, 12))
    data, chunks = chunks_of(f"# T\n\n{body}\n\n## Context\n\n" + "word " * 200, tokens=40)
    assert_spans_exact(data, chunks)
    assert chunks[0].line_start == 1
    # a piece is labelled by the section that holds its text: the title's for the dates
    # (and a piece holding both), Context for the words
    for c in chunks:
        assert c.breadcrumb == ("T" if "Date:" in c.text else "T › Context"), c.text
    assert {c.breadcrumb for c in chunks} == {"T", "T › Context"}
    assert "".join(c.text for c in chunks).count("Date:") == 11


def test_every_headings_words_are_in_a_chunk():
    """A heading with no text of its own is in its children's crumbs; one with no children
    either (`### Deep` before `## Next`, a last heading, a note that is only its title) joins
    the section after it as a stub, or the one before it at the end."""
    data, chunks = chunks_of(
        """
        # Top

        ## One

        text of one

        ### Deep
        ## Two

        text of two

        ## Last
        """
    )
    words = " ".join(c.text + " " + c.breadcrumb for c in chunks)
    for heading in ("Top", "One", "Deep", "Two", "Last"):
        assert heading in words, heading
    (two,) = [c for c in chunks if "text of two" in c.text]
    assert two.text.startswith("### Deep\n## Two")
    assert_spans_exact(data, chunks)
    _, only = chunks_of("# Just a title\n")
    assert [c.text for c in only if c.kind == "section"] == ["# Just a title"]
    # A heading whose children carry it is not repeated as a chunk of its own.
    _, nested = chunks_of("# T\n\n## Parent\n\n### Child\n\nbody\n")
    assert [c.breadcrumb for c in nested if c.kind == "section"] == ["T › Parent › Child"]


# -- every chunk labelled by the heading its text sits under (issue 55) ---------------------

# cometbft's docs/references/architecture/README.md: its title, then lines 36-75, the lists of
# ADRs (`### Deprecated` has no text; `### Rejected` and the two before it hold links only).
COMETBFT_TOC = """\
# Architecture Decision Records (ADR)

Intro text.

## Table of Contents

The following ADRs are exclusively relevant to CometBFT. For historical ADRs
relevant to Tendermint Core as well, please see [this list](./tendermint-core/).
To distinguish CometBFT ADRs from historical ones from Tendermint Core, we start
numbering our ADRs from 100 onwards.

### Proposed

- [ADR-113: Modular transaction hashing](adr-113-modular-transaction-hashing.md)

### Accepted

- [ADR-101: Data companion pull API](adr-101-data-companion-pull-api.md)
- [ADR-102: RPC Companion](adr-102-rpc-companion.md)
- [ADR-103: Protobuf definition versioning](adr-103-proto-versioning.md)
- [ADR-104: State sync from local snapshot](adr-104-out-of-band-state-sync.md)
- [ADR-105: Refactor list of senders in mempool](adr-105-refactor-mempool-senders.md)
- [ADR-106: gRPC API](adr-106-grpc-api)
- [ADR-107: Rename protobuf versions of 0.x releases to pre-v1 betas](adr-107-betaize-proto-versions.md)
- [ADR-109: Reduce CometBFT Go API Surface Area](adr-109-reduce-go-api-surface.md)
- [ADR-111: `nop` Mempool](adr-111-nop-mempool.md)
- [ADR-112: Proposer-Based Timestamps](adr-112-proposer-based-timestamps.md)
- [ADR-114: Partly Undo ADR 109](adr-114-undo-109.md)
- [ADR-115: Predictable Block Times](adr-115-predictable-block-times.md)
- [ADR-118: Mempool Lanes](adr-118-mempool-lanes.md)
- [ADR-119: Dynamic Optimal Graph (DOG) gossip protocol](adr-119-dog-mempool-gossip.md)

### Accepted but Not (Yet) Implemented

- [ADR-102: RPC Companion](adr-102-rpc-companion.md)
- [ADR-104: State sync from local snapshot](adr-104-out-of-band-state-sync.md)
- [ADR-105: Refactor list of senders in mempool](adr-105-refactor-mempool-senders.md)

### Deprecated

### Rejected

- [ADR-100: Data companion push API](adr-100-data-companion-push-api.md)
- [ADR-110: Remote mempool](adr-110-remote-mempool.md)
"""  # noqa: E501

# decentraland's ADR-48-locking-collections-in-the-builder.md: its title, lines 24-27 and 56-83
# (`## Implementation`, two links, after `### What's being locked`, the last part of `## Problem`).
DECENTRALAND_48 = """\
---
title: Locking Collections in the builder
---

## Problem

Publishing is done by sending a transaction. This means that the user will craft a transaction and send it to our server where it will ultimately be sent to the corresponding Polygon network to be processed.
This process is usually pretty quick, but it can still take a while. It's a combination of a remote request to our server, and waiting for a transaction to be confirmed. The problem is therefore, that while we're waiting for the transaction to complete we should **lock** the collection/items that are being published, to avoid having missmatching data between the blockchain and our database.
### What's being locked

As we said before, the locking mechanism is in place so we can avoid desynching the database with the blockchain. Anyone consuming this data can read this property and disable all components that change data that's being commited to the Blockchain.

- **Decentraland**: Once the collection is published, every property that changes the address should not be updated. These are:

  - The name
  - Adding or removing items
  - Changing items data:
    - rarity
    - price
    - beneficiary
    - metadata
      - type
      - name
      - description
      - data (the BodyShape and Category)

- **Third Party**: Once the items are published, the URN cannot change anymore. That means that item `token_id`s and virtual collection `urn_suffix`es. For reference, and URN looks like this: `urn:decentraland:{network}:collections-thirdparty:{third-party-name}:{collection-id}:{item-id}` where
  - network: the network the item is in, `mumbai`, `matic`, etc
  - third-party-name: the name of the third party record the item belongs to, like `crypto-motors`
  - collection-id: the virtual collection's `urn_suffix`, used as part of the full URN and locked after the first item is published as it will be used for all subsequent items
  - item-id: the item's `token_id`, editable up until publication

## Implementation

- [Builder-server](https://github.com/decentraland/builder-server)
- [Builder](https://github.com/decentraland/builder)
"""  # noqa: E501


def named(breadcrumb: str) -> list[str]:
    """The headings a breadcrumb ends with: its last part, or each section that part lists."""
    return breadcrumb.rsplit(" › ", 1)[-1].split(" · ")


def chunk_holding(chunks, words: str):
    (chunk,) = [c for c in chunks if c.kind == "section" and words in c.text]
    return chunk


def test_trailing_stubs_are_labelled_by_their_own_headings():
    """The list of rejected ADRs was labelled `… › Table of Contents › Accepted`: stubs (link
    lists) merged back into the last section kept its label."""
    data, chunks = chunks_of(COMETBFT_TOC)
    assert_spans_exact(data, chunks)
    rejected = chunk_holding(chunks, "ADR-110: Remote mempool")
    assert rejected.breadcrumb.startswith("Architecture Decision Records (ADR) › Table of Contents")
    assert "Rejected" in named(rejected.breadcrumb)
    assert "Accepted" not in named(rejected.breadcrumb)  # none of its text is under Accepted
    proposed = chunk_holding(chunks, "ADR-113: Modular transaction hashing")
    assert named(proposed.breadcrumb)[0] == "Proposed"  # merged forward: named too
    # shown at the section the stubs joined (`### Accepted`), the span from the first stub on
    assert (proposed.line_start, proposed.line) == (12, 16)
    for chunk in chunks:  # each list under a label that names its heading
        for heading, first in (("Accepted", "ADR-101"), ("Rejected", "ADR-100")):
            if f"[{first}:" in chunk.text:
                assert heading in named(chunk.breadcrumb), chunk.breadcrumb


def test_a_stub_after_a_subsection_is_not_labelled_by_it():
    """`## Implementation` after `### What's being locked` was labelled `Problem › What's being
    locked`."""
    data, chunks = chunks_of(DECENTRALAND_48)
    assert_spans_exact(data, chunks)
    links = chunk_holding(chunks, "[Builder-server]")
    assert "Implementation" in named(links.breadcrumb)
    assert "Problem" not in links.breadcrumb.split(" › ")  # it is not under Problem
    locked = chunk_holding(chunks, "As we said before, the locking mechanism")
    assert "What's being locked" in named(locked.breadcrumb)
