"""Every chunk of the corpora labelled by the heading its text sits under (issue 55), checked
by an oracle that reads each file with the CommonMark parser apart from the chunker
(tests/heading_labels.py). Before the fix 408 ADR chunks, 157 of dendron-site, 24 of
obsidian-tasks and 2,078 of cpp-docs held a heading's text under another section's label
(doc/benchmarks/retrieval.md)."""

from __future__ import annotations

import pytest

from ..conftest import corpus
from ..heading_labels import count, mislabels, sections


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["adr", "dendron-site", "obsidian-tasks", "cpp-docs"])
def test_no_chunk_of_a_corpus_is_labelled_by_another_section(name):
    found = count(corpus(name))
    assert found.files > 300 and found.chunks > found.files
    assert found.found == []


def test_the_oracle_reads_headings_bodies_and_both_readings_of_a_piped_wiki_link():
    data = (
        b"---\ntitle: T\n---\n# Top\n\nintro\n\n## A [[left|right]] ![img](x.png)\n\nbody a\n"
        b"> # quoted, not a heading\n\n### B `code`\nbody b\n"
    )
    heads = sections(data)
    assert [(h.level, h.words, h.line) for h in heads] == [
        (1, ("top",), 4),
        (2, ("a right", "a left"), 8),
        (3, ("b code",), 13),
    ]
    assert data[heads[1].body_start : heads[1].body_end].strip().startswith(b"body a\n>")
    assert heads[2].crumbs == {"top", "a right", "a left", "b code"}


class _Chunk:
    kind = "section"

    def __init__(self, text: bytes, data: bytes, breadcrumb: str, ordinal: int = 0):
        self.byte_start = data.index(text)
        self.byte_end = self.byte_start + len(text)
        self.breadcrumb, self.ordinal = breadcrumb, ordinal


def test_the_oracle_flags_text_under_a_label_that_does_not_name_its_heading():
    data = b"# T\n\n## Consequences\n\nwords\n\n### Links\n\n- [x](x)\n\n## See also\n\n- [y](y)\n"
    ok = [
        _Chunk(b"## Consequences\n\nwords\n\n### Links\n\n- [x](x)", data, "T › Consequences"),
        _Chunk(b"## See also\n\n- [y](y)", data, "T › Other · See also", 1),
    ]
    assert mislabels("t.md", data, ok) == []  # a parent's label, or one that lists it
    bad = [_Chunk(b"words\n\n### Links\n\n- [x](x)\n\n## See also\n\n- [y](y)", data, "T › Links")]
    found = mislabels("t.md", data, bad)  # `words` and the last link are not under Links
    assert [(m.line, m.heading) for m in found] == [(3, "consequences"), (11, "see also")]
    bad[0].breadcrumb = "T › Consequences"
    (found,) = mislabels("t.md", data, bad)
    assert (found.line, found.heading) == (11, "see also")
    bad[0].breadcrumb = "T"  # the title alone: the whole document
    assert mislabels("t.md", data, bad) == []
