"""The query parser: user text to plain words, phrases, one trailing prefix and facet tokens.

User text never reaches an index's query syntax. AND, OR, NOT, NEAR, parentheses and other
punctuation are ordinary words; only double quotes (a phrase), a `*` at the end of the last word
(a prefix scan) and `field:value` / `-field:value` / `field:"two words"` for a field the caller
declares (spec §6) mean something. `foo:bar` for any other `foo` stays words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

# A facet with a quoted value, a quoted phrase, or a bare word (perhaps `field:value`).
_PIECES = re.compile(r'(?<!\S)(-?)([A-Za-z_][\w.-]*):"([^"]*)"?|"([^"]*)"?|(\S+)')
_BARE_FACET = re.compile(r"^(-?)([A-Za-z_][\w.-]*):(.+)$")


@dataclass(frozen=True)
class QueryItem:
    text: str  # as the user wrote it, without quotes or the trailing *
    phrase: bool = False  # quoted: the words must be adjacent and in order
    prefix: bool = False  # a trailing * on the last word
    optional: bool = False  # scores but is not required (the lexical rarer-half pass)


@dataclass(frozen=True)
class FacetToken:
    field: str
    value: str
    negated: bool = False


@dataclass
class ParsedQuery:
    raw: str
    items: list[QueryItem] = field(default_factory=list)
    facets: list[FacetToken] = field(default_factory=list)  # stripped from the words

    @property
    def text(self) -> str:
        """The words for stages that read meaning, not syntax (semantic, rerank)."""
        return " ".join(i.text for i in self.items)

    @property
    def empty(self) -> bool:
        return not self.items


def parse_query(raw: str, is_facet: Callable[[str], bool] | None = None) -> ParsedQuery:
    """`is_facet(name)`: whether `name:value` filters (a declared field) or is words."""
    items: list[QueryItem] = []
    facets: list[FacetToken] = []
    for m in _PIECES.finditer(raw):
        neg, name, fvalue, quoted, word = m.groups()
        if name is not None:  # field:"quoted value"
            if is_facet is not None and is_facet(name) and fvalue.strip():
                facets.append(FacetToken(name, fvalue.strip(), bool(neg)))
                continue
            items.append(QueryItem(f"{neg}{name}:"))
            quoted = fvalue
        if quoted is not None:
            if quoted.strip():
                items.append(QueryItem(quoted.strip(), phrase=True))
        elif word:
            bare = _BARE_FACET.match(word) if is_facet is not None and ":" in word else None
            if bare and is_facet is not None and is_facet(bare.group(2)):
                facets.append(FacetToken(bare.group(2), bare.group(3), bool(bare.group(1))))
            else:
                items.append(QueryItem(word))
    if items and not items[-1].phrase and items[-1].text.endswith("*"):
        stem = items[-1].text.rstrip("*")
        items[-1] = QueryItem(stem, prefix=True) if stem else items[-1]
        if not stem:
            items.pop()
    return ParsedQuery(raw, items, facets)
