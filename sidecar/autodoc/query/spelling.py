"""Typo tolerance (issue 41): a content word that no chunk holds is looked up within one edit
(five to eight letters) or two (more), and the lexical stage searches the corrected words as
well; the answer's `did_you_mean` is the query as the user would retype it.

Only words found nowhere are corrected, so a rare word the vault does hold is never "fixed";
words under five letters, numbers and codes are left alone (too many near neighbours). The
corrections come from the lexical index's term dictionary (`Lexical.correction`); the word
shown is the form a chunk actually uses, read from that chunk's text.
"""

from __future__ import annotations

import re
import sqlite3

from autodoc.bm25.analyzer import Lexical, analyze, edit_distance
from autodoc.parse.query_parser import ParsedQuery, QueryItem
from autodoc.store import Store

MIN_LETTERS = 5  # shorter words are not corrected
ONE_EDIT_UP_TO = 8  # letters: one edit up to here, two beyond
_WORD = re.compile(r"[^\W\d_]+")


def edits_allowed(word: str) -> int:
    """0 (not corrected), 1 or 2 edits for a word of this length."""
    if len(word) < MIN_LETTERS or not word.isalpha():
        return 0
    return 1 if len(word) <= ONE_EDIT_UP_TO else 2


def correct(
    conn: sqlite3.Connection,
    store: Store,
    lexical: Lexical,
    query: ParsedQuery,
    absent: list[str],
) -> tuple[ParsedQuery, str] | None:
    """(the query with each correctable absent word replaced, its text as the user would type
    it), or None when no absent word has a correction."""
    fixes: dict[str, str] = {}
    for word in absent:
        distance = edits_allowed(word)
        if not distance:
            continue
        found = lexical.correction(word, distance)
        if found is None:
            continue
        term, chunk = found
        fixes[word.lower()] = surface_form(conn, store, chunk, term, word) or term
    if not fixes:
        return None
    items = [QueryItem(_replace(i.text, fixes), i.phrase, i.prefix) for i in query.items]
    raw = _replace(query.raw, fixes)
    return ParsedQuery(raw, items, list(query.facets)), raw


def surface_form(
    conn: sqlite3.Connection, store: Store, chunk_id: int, term: str, typed: str
) -> str | None:
    """Of the chunk's words that analyze to `term`, lower-cased, the one nearest to what was
    typed (what the vault writes: `kubernetes`, not the stem `kubernet`)."""
    row = store.chunk_rows(conn, [chunk_id]).get(chunk_id)
    if row is None:
        return None
    text = f"{row['title'] or ''} {row['text'] or ''}"
    forms = {w.lower() for w in _WORD.findall(text) if analyze(w) == [term]}
    cap = len(typed)
    return min(forms, key=lambda f: (edit_distance(typed.lower(), f, cap), f), default=None)


def _replace(text: str, fixes: dict[str, str]) -> str:
    def swap(m: re.Match[str]) -> str:
        return fixes.get(m.group(0).lower(), m.group(0))

    return _WORD.sub(swap, text)
