"""The documents a query names by their name (issue 55), looked up in the names table: the note
a prefix query completes (`looku*`, `lame du*`: the note titled Lookup, Lame Duck) and the note
titled or aliased by a definition question's term (`what is a vault`: the note titled Vault).

A person who types the start of a name, or asks what a thing is, means that note, and a
retriever's order does not always say so: a prefix scores every word it completes alike, so a
reference note's many short sections (`lookup: enable`, `lookup: disable`, a glossary line)
crowd the note the word names; a question's frame (`what … this`) matches any chunk. Fusion
lists each such document's best hit first (`ranking.tiers`), as the exact-name pin does for a
query that is a whole title.
"""

from __future__ import annotations

import sqlite3

from autodoc import store
from autodoc.parse.query_parser import ParsedQuery
from autodoc.query.intent import definition_term
from autodoc.wire.protocol import Intent

COMPLETED_READ = 50  # documents a prefix may name: `a*` completes many, each still one name


def named_documents(
    conn: sqlite3.Connection, ws_id: int, query: ParsedQuery, intent: Intent
) -> set[int]:
    """The documents `query` names: by a name its prefix completes (a `prefix` query), or by
    its definition question's term (`definition_term`); none for any other query."""
    if intent == "prefix":
        prefix = " ".join(query.text.split()).lower()
        return set(store.documents_completed(conn, ws_id, prefix, COMPLETED_READ))
    term = definition_term(query)
    if term is None:
        return set()
    for key in number_forms(term):  # the term as asked first: `vault` names Vault, not Vaults
        found = store.documents_named(conn, ws_id, key)
        if found:
            return set(found)
    return set()


def number_forms(term: str) -> list[str]:
    """The term and its other grammatical number, as a title may write it: `pods` and `pod`,
    `vault` and `vaults`, `policies` and `policy`."""
    forms = [term]
    if term.endswith("ies"):
        forms.append(term[:-3] + "y")
    elif term.endswith("s") and not term.endswith("ss"):
        forms.append(term[:-1])
    else:
        forms.append(term + "s")
    return forms
