"""The name index `search.find` reads: the names of `parse/names.py` written per document.

Storage (one set per workspace, written in the transaction that publishes a document):
`symbols` (id, name), `symbol_keys` (key, position, symbol) and `symbol_sites` (symbol,
document, kind, label, line) with one site per name and document, at its strongest kind;
`label` is the length of the title or heading a name came from: `CWnd` in "CWnd Class" is
more the subject of its page than in "Detaching a CWnd from Its HWND".
"""

from __future__ import annotations

from autodoc import store as sql
from autodoc.parse.names import suffix_keys

# -- writing --------------------------------------------------------------------------------


def _detach(conn, doc_ids: list[int]) -> set[int]:
    """Delete these documents' sites; the names they used, to check for orphans after."""
    return sql.detach_names(conn, doc_ids)


def _drop_orphans(conn, ws_id: int, symbol_ids: set[int]) -> None:
    """Names no document uses any more leave the dictionary (their keys by primary key)."""
    orphans = sql.orphan_names(conn, sorted(symbol_ids))
    sql.drop_names(conn, ws_id, [(sid, suffix_keys(name)) for sid, name in orphans])


def forget_documents(conn, ws_id: int, doc_ids: list[int]) -> None:
    """Deleted documents: their sites go, and the names only they used."""
    _drop_orphans(conn, ws_id, _detach(conn, doc_ids))


def write_documents(
    conn,
    ws_id: int,
    docs: list[tuple[int, dict[str, tuple[int, int, int]]]],
    replaced: list[int],
) -> None:
    """Replace the sites of these documents (`replaced`: those that may have had some)."""
    used = _detach(conn, replaced)
    names = sorted({name for _, sites in docs for name in sites})
    known = sql.name_ids(conn, ws_id, names)
    fresh = [n for n in names if n not in known]
    added = sql.add_names(conn, ws_id, fresh)
    known.update(added)
    key_rows = [
        (ws_id, key, pos, sid) for name, sid in added.items() for pos, key in suffix_keys(name)
    ]
    key_rows.sort()  # in key order: B-tree pages fill in sequence
    sql.add_name_keys(conn, key_rows)
    sql.add_name_sites(
        conn,
        sorted(
            (known[name], doc_id, kind, label, line)
            for doc_id, sites in docs
            for name, (kind, label, line) in sites.items()
        ),
    )
    _drop_orphans(conn, ws_id, used - {known[n] for n in names})
