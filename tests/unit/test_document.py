"""Frontmatter, tags and links: parsed safely, problems reported, never fatal."""

from __future__ import annotations

from autodoc.parse.document import links_on_line, parse_document


def parse(text: str, path: str = "notes/x.md"):
    return parse_document(text.encode(), path)


def test_frontmatter_fields_tags_aliases():
    d = parse(
        "---\ntitle: Storage\ntags: [SQLite, storage]\naliases: [db decision]\n"
        "status: accepted\ndate: 2024-05-01\n---\n# Storage\n\nText with #Infra and #ops/oncall.\n"
    )
    assert d.title == "Storage"
    assert d.tags == ["sqlite", "storage", "infra", "ops/oncall"]
    assert d.aliases == ["db decision"]
    assert d.meta["status"] == "accepted"
    assert d.meta["date"] == "2024-05-01"  # kept as JSON
    assert d.problems == []


def test_inline_tags_skip_code_headings_and_numbers():
    d = parse(
        "# Title\n\nissue #123 and `#notatag` and #real, see [Attach](#attach) and a#b\n\n"
        "```\n#incode\n```\n"
    )
    assert d.tags == ["real"]


def test_malformed_frontmatter_is_reported_and_text_still_parsed():
    d = parse("---\ntitle: [unclosed\n---\n# Heading\n\nbody #tag\n")
    assert d.problems and "malformed frontmatter" in d.problems[0]
    assert "line" in d.problems[0]
    assert d.title == "Heading"
    assert d.tags == ["tag"]


def test_yaml_is_parsed_safely():
    d = parse("---\nx: !!python/object/apply:os.system ['echo pwned']\n---\n# T\n")
    assert d.meta == {}
    assert d.problems


def test_yaml_alias_bomb_is_refused():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, 9):
        bomb += f"{chr(97 + i)}: &{chr(97 + i)} [*{chr(96 + i)}, *{chr(96 + i)}, *{chr(96 + i)}]\n"
    d = parse(f"---\n{bomb}---\n# T\n")
    assert d.meta == {}
    assert any("expands" in p for p in d.problems)


def test_non_string_keys_and_non_mapping_frontmatter():
    d = parse("---\n1: one\n2.5: half\n2024-01-02: day\n---\n# T\n")
    assert d.meta == {"1": "one", "2.5": "half", "2024-01-02": "day"}
    d = parse("---\n[a, b]: listkey\n---\n# T\n")
    assert d.meta == {} and "malformed frontmatter" in d.problems[0]
    d = parse("---\n- a\n- b\n---\n# T\n")
    assert d.meta == {} and "not a mapping" in d.problems[0]


def test_invalid_date_is_reported():
    d = parse("---\ndate: 2023-02-30\n---\n# T\n")
    assert d.problems and d.meta == {}


def test_links_wiki_and_relative():
    d = parse(
        "# T\n\n[[Other Note|label]] and [[folder/page#Section]] and ![[image.png]]\n"
        "[rel](../adr/0001.md#ctx) [web](https://example.com) [anchor](#local) "
        "[spaced](<my file.md>)\n\n```\n[[not a link]]\n```\n"
    )
    got = [(ln.kind, ln.target, ln.heading, ln.line) for ln in d.links]
    assert got == [
        ("wiki", "Other Note", "", 3),
        ("wiki", "folder/page", "Section", 3),
        ("wiki", "image.png", "", 3),
        ("md", "../adr/0001.md", "ctx", 4),
        ("md", "my file.md", "", 4),
    ]


def test_invalid_utf8_is_kept_byte_exact_and_reported():
    data = b"# T\n\ncaf\xe9 latte\n"
    d = parse_document(data, "x.md")
    assert d.problems and "invalid UTF-8 at byte 8" in d.problems[0]
    assert d.offsets[-1] == len(data)


def test_a_wiki_link_in_a_table_row_escapes_its_pipe():
    """Obsidian writes `[[note\\|label]]` inside a table (a bare `|` would end the cell): the
    link is to `note`, not to `note\\`."""
    got = [(link.target, link.heading) for _, _, link in links_on_line(
        r"| [[b\|shown]] | [[c#Part\|x]] | [[a\b]] |")]  # fmt: skip
    assert got == [("b", ""), ("c", "Part"), ("a\\b", "")]
