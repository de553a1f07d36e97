"""Notes to link to after `[[`: what was typed looked up in the name index (a title's, an
alias's, a file name's or a path's start; from three letters also a later word of a title or
alias), and while little is typed, ordered by the meaning of the paragraph being written (its
one vector against the stored ones: the nearest notes first). Nothing typed and no vectors: the
notes most linked to.

Every read is an index range with a cap (`store/completion_rows.py`); the entries are written
in the vault's link style (`link_style.py`).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

import numpy as np

from autodoc import store as sql
from autodoc.links.completion_context import Entry, Where, continued, matches
from autodoc.links.link_style import LinkStyle
from autodoc.parse.names import query_key, without_md_suffix
from autodoc.store import Store, Workspace, read_epochs
from autodoc.vectors.nearest import SemanticPlan

SHORT = 2  # typed this many letters or fewer: the paragraph's meaning orders the notes
# Names read per lookup, per letter typed up to NAME_CAP: cpp-docs has 7k names starting with
# `c`; ordering 4,000 of them took ~7 ms, 1,000 ~2 (and one letter leaves the list incomplete).
NAME_CAP_PER_LETTER = 1000
NAME_CAP = 4000
NAME_ROWS = 4  # rows kept per entry asked for (a note has several names that may match)
SUBWORD_MIN = 3  # letters typed before a later word of a title or alias is looked up
NEAREST_CHUNKS = 200  # sections read by meaning (several may be one note's)
LINKED_KEPT = 8  # workspaces whose most linked notes are kept (per index state)
# A name's kind, best first, where two names of a note match alike.
Ranked = Literal["", "names", "meaning", "links"]  # how the entries were ordered
_RANK_ORDER = {sql.NAME_TITLE: 0, sql.NAME_ALIAS: 1, sql.NAME_STEM: 2, sql.NAME_PATH: 3}


@dataclass
class _Match:
    tier: int  # 0: a whole name, 1: its start, 2: a later word of a title or alias
    rank: int  # the name's kind (sql.NAME_*), as `_RANK_ORDER` orders them
    name: str  # as written (the title, an alias, the file name, the path without `.md`)
    inbound: int
    path: str
    key: tuple = ()  # the order: tier, a name before a path, the most linked, kind, length

    def __post_init__(self) -> None:
        by_path = self.rank == sql.NAME_PATH  # a folder's letters start every path in it
        self.key = (self.tier, by_path, -self.inbound, _RANK_ORDER[self.rank], len(self.name),
                    self.path)  # fmt: skip


def short(where: Where) -> bool:
    """Little enough typed for the paragraph's meaning to order the notes."""
    return len(where.typed.strip()) <= SHORT


def nearest_notes(
    conn, store: Store, ws: Workspace, plan: SemanticPlan, qvec: np.ndarray
) -> list[int]:
    """Notes by the nearness of their nearest section to `qvec`, nearest first (the stored
    vectors; nothing embedded here)."""
    if plan.signs is None or plan.model_fp is None:
        return []
    found, _ = plan.nearest_now(conn, store, ws, qvec, NEAREST_CHUNKS)
    return list(dict.fromkeys(doc for _, doc, _ in found))


def note_entries(
    conn,
    ws: Workspace,
    rel: str,
    where: Where,
    style: LinkStyle,
    limit: int,
    nearest: list[int] | None,
) -> tuple[list[Entry], bool, Ranked]:
    """(entries, whether more matched, how they were ranked: "names", "meaning" or "links").
    `nearest`: notes by the paragraph's meaning (None: not asked for, or no vectors)."""
    typed = where.typed.strip()
    own = sql.live_document_id(conn, ws.id, rel)
    found, cut = _lexical(conn, ws.id, typed, limit) if typed else ({}, False)
    found.pop(own or 0, None)
    by_name = sorted(found, key=lambda d: found[d].key)
    ranked: Ranked
    if not typed:
        order, ranked = [d for d in nearest or () if d != own], "meaning"
        if len(order) <= limit:  # no vectors, or too few notes near: the most linked after them
            linked = _most_linked(conn, ws, limit + 2)
            have = set(order)
            order += [d for d in linked if d != own and d not in have]
            cut = len(linked) > limit
            ranked = "meaning" if nearest else "links"
    elif nearest and len(typed) <= SHORT:
        near_found = _among(conn, nearest, typed)
        near = [d for d in nearest if d in near_found and d != own]
        for d in near:
            found.setdefault(d, near_found[d])
        kept = set(near)
        order = near + [d for d in by_name if d not in kept]
        ranked = "meaning" if near else "names"
    else:
        order, ranked = by_name, "names"
    cut = cut or len(order) > limit
    order = order[:limit]
    notes = sql.notes(conn, order)
    entries = [_entry(notes[d], found.get(d), where, style, rel) for d in order if d in notes]
    return entries, cut, ranked


def _most_linked(conn, ws: Workspace, limit: int) -> list[int]:
    """The notes most linked to (a sort of the workspace's documents: kept per index state)."""
    epochs = read_epochs(conn, ws.id)
    key = (str(ws.root), ws.id, epochs and epochs[0], limit)
    with _linked_lock:
        held = _linked.get(key)
    if held is None:
        held = [n[0] for n in sql.most_linked_notes(conn, ws.id, limit)]
        with _linked_lock:
            if len(_linked) >= LINKED_KEPT:
                _linked.clear()
            _linked[key] = held
    return held


_linked: dict[tuple, list[int]] = {}
_linked_lock = threading.Lock()


def _lexical(conn, ws_id: int, typed: str, limit: int) -> tuple[dict[int, _Match], bool]:
    """{note: its best-matching name} for what was typed, and whether more matched."""
    prefix = typed.lower()
    found: dict[int, _Match] = {}
    cap = min(NAME_CAP, NAME_CAP_PER_LETTER * len(prefix))
    rows, cut = sql.notes_named_from(conn, ws_id, prefix, cap, NAME_ROWS * limit)
    for doc, rank, key, inbound, path in rows:
        _keep(found, doc, _Match(0 if key == prefix else 1, rank, key, inbound, path))
    key = query_key(typed)
    if len(key) >= SUBWORD_MIN and len(found) < limit:  # a later word ranks after every start
        words, more = sql.notes_by_title_word(conn, ws_id, key, NAME_CAP)
        cut = cut or more
        for doc, kind, name, pos, inbound, path in words:
            rank = sql.NAME_TITLE if kind == 0 else sql.NAME_ALIAS
            _keep(found, doc, _Match(2 if pos else 1, rank, name, inbound, path))
    return found, cut


def _among(conn, docs: list[int], typed: str) -> dict[int, _Match]:
    """{note: its best-matching name} of these notes whose names what was typed begins (a
    name's start, or a later word of a title or alias)."""
    prefix = typed.lower()
    found: dict[int, _Match] = {}
    for doc, rank, key in sql.note_names(conn, docs):
        if key.startswith(prefix):
            _keep(found, doc, _Match(0 if key == prefix else 1, rank, key, 0, ""))
        elif rank in (sql.NAME_TITLE, sql.NAME_ALIAS) and matches(typed, key):
            _keep(found, doc, _Match(2, rank, key, 0, ""))
    return found


def _keep(found: dict[int, _Match], doc: int, match: _Match) -> None:
    held = found.get(doc)
    if held is None or match.key < held.key:
        found[doc] = match


def _entry(note: tuple, match: _Match | None, where: Where, style: LinkStyle, rel: str) -> Entry:
    """A note as an entry: shown by its title (or the alias typed), inserted as a link in the
    vault's style (its opener already written), filtered by the name that matched."""
    _, path, title, aliases, _ = note
    bare = without_md_suffix(path)
    name, alias = title or PurePosixPath(bare).name, ""
    if match is not None:
        if match.rank == sql.NAME_ALIAS:
            alias = _alias(aliases, match.name) or ""
            name = alias or name
        elif match.rank == sql.NAME_STEM:
            name = PurePosixPath(bare).name
        elif match.rank == sql.NAME_PATH:
            name = bare
        elif match.tier == 2:
            name = match.name
    label_for_link = alias or (title if style.form == "markdown" else "")
    if where.closed and style.form == "wiki":  # `#heading` or `|label` follow: the name alone
        label_for_link = ""
    link = style.link(path, label=label_for_link, from_path=rel)
    new_text = link[2:] if link.startswith("[[") else link[1:]
    if where.closed and new_text.endswith("]]"):
        new_text = new_text[:-2]
    shown = alias or title or PurePosixPath(bare).name
    return Entry(
        label=shown,
        kind="note",
        detail=path if not alias else f"{title} · {path}",
        new_text=new_text,
        filter_text=continued(where.typed, name),
        path=path,
        line=1,
    )


def _alias(aliases: str | None, key: str) -> str | None:
    """The alias as written that `key` names (in any case)."""
    try:
        listed = json.loads(aliases) if aliases else []
    except ValueError:
        return None
    want = key.strip().lower()
    return next((a for a in listed if isinstance(a, str) and a.strip().lower() == want), None)
