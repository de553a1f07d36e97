"""The query parser: user text to plain words, phrases and one trailing prefix.

User text never reaches an index's query syntax. AND, OR, NOT, NEAR, `field:`, parentheses and
other punctuation are ordinary words; only double quotes (a phrase) and a `*` at the end of the
last word (a prefix scan) mean something.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PIECES = re.compile(r'"([^"]*)"?|(\S+)')


@dataclass(frozen=True)
class QueryItem:
    text: str  # as the user wrote it, without quotes or the trailing *
    phrase: bool = False  # quoted: the words must be adjacent and in order
    prefix: bool = False  # a trailing * on the last word


@dataclass
class ParsedQuery:
    raw: str
    items: list[QueryItem] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The words for stages that read meaning, not syntax (semantic, rerank)."""
        return " ".join(i.text for i in self.items)

    @property
    def empty(self) -> bool:
        return not self.items


def parse_query(raw: str) -> ParsedQuery:
    items: list[QueryItem] = []
    for m in _PIECES.finditer(raw):
        quoted, word = m.group(1), m.group(2)
        if quoted is not None:
            if quoted.strip():
                items.append(QueryItem(quoted.strip(), phrase=True))
        elif word:
            items.append(QueryItem(word))
    if items and not items[-1].phrase and items[-1].text.endswith("*"):
        stem = items[-1].text.rstrip("*")
        items[-1] = QueryItem(stem, prefix=True) if stem else items[-1]
        if not stem:
            items.pop()
    return ParsedQuery(raw, items)
