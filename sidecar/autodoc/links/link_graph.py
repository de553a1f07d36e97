"""The workspace's link graph as one index run keeps it: the dialect the run reads links in, each
published document's links and names written in it, a deleted document's forgotten, and the
links the changes can affect resolved again (inbound counts and supersessions with them).

One `LinkGraph` per run (`index/indexer.py` drives it): it remembers what the run changed, so a
save re-resolves only the links around the documents it touched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from autodoc.links import vault_markers
from autodoc.links.dialect import Dialect
from autodoc.parse.document import ParsedDocument
from autodoc.store import Store, Workspace, reads, writes

PIPED_SAMPLE = 5_000  # piped wiki links a run in no decided dialect weighs both ways


@dataclass(frozen=True)
class Published:
    """A document the run publishes: its id, root-relative path and what the parser read."""

    doc_id: int
    rel: str
    parsed: ParsedDocument
    created: bool  # new to the store: it had no links or names to forget


class LinkGraph:
    def __init__(self, store: Store, ws: Workspace, is_file: Callable[[str], bool]) -> None:
        self.store = store
        self.ws = ws
        self.is_file = is_file
        self._stored = ws.link_dialect  # as the store holds it
        self.dialect = Dialect.from_json(self._stored)  # until `decide` is called
        self._piped: list[tuple[str, str, str]] = []
        self.start_run()

    def start_run(self) -> None:
        """Forget what the last run changed (the dialect stays)."""
        self._changed: set[int] = set()  # documents published or retired in this run
        self._old_targets: set[int] = set()  # what their replaced links pointed at
        self._old_keys: set[str] = set()  # their names before: a link may now resolve anew

    # -- the dialect ---------------------------------------------------------------------------

    def decide(self) -> Dialect:
        """The dialect a full run reads links in (the option, the vault's marker files, what
        its links said before), stored when it changed."""
        option = self.ws.options["links"]["dialect"]
        dialect = vault_markers.decide(self.ws.root, option, self.dialect)
        self._store(dialect)
        return dialect

    def _store(self, dialect: Dialect) -> None:
        if dialect.to_json() != self._stored:
            with self.store.transaction() as conn:
                writes.save_link_dialect(conn, self.ws.id, dialect.to_json())
            self._stored = dialect.to_json()
        self.dialect = dialect

    def read(self, rel: str, parsed: ParsedDocument) -> None:
        """Note a parsed document's piped wiki links while no dialect is decided: which side of
        their `|` names a note says which the vault writes."""
        if self.dialect.source != "default" or len(self._piped) >= PIPED_SAMPLE:
            return
        for ln in parsed.links:
            if ln.kind == "wiki" and ln.label:
                before = ln.target + (f"#{ln.heading}" if ln.heading else "")
                self._piped.append((rel, before, ln.label))

    def reads_label_first(self) -> bool:
        """After a run in no decided dialect: whether the vault's piped wiki links resolve
        clearly better label first (Dendron's `[[label|target]]`); if so the dialect is
        stored, and the caller reads every document again in it."""
        pairs, self._piped = self._piped, []
        if self.dialect.source != "default" or not pairs:
            return False
        with self.store.snapshot() as conn:
            found = vault_markers.from_links(
                pairs, lambda keys: reads.known_name_keys(conn, self.ws.id, keys), self.dialect
            )
        if found is None:
            return False
        self._store(found)
        return True

    # -- writing -------------------------------------------------------------------------------

    def replace(self, conn, docs: Sequence[Published]) -> None:
        """The published documents' links and names, as the dialect reads them (unresolved
        until `resolve`)."""
        ws_id, key = self.ws.id, self.dialect.key
        self._changed.update(d.doc_id for d in docs)
        self.forget(conn, [d.doc_id for d in docs if not d.created])
        writes.add_links(
            conn,
            [
                (d.doc_id, ws_id, ln.kind, ln.target, *_keyed(key(d.rel, ln.kind, ln.target,
                 self.is_file), ln.heading, ln.line, ln.relation))
                for d in docs
                for ln in d.parsed.links
            ],
        )  # fmt: skip
        writes.add_document_names(
            conn,
            [
                (ws_id, name, d.doc_id, rank)
                for d in docs
                for name, rank in self.dialect.names(d.rel, d.parsed.title, d.parsed.aliases)
            ],
        )

    def forget(self, conn, doc_ids: list[int]) -> None:
        """Drop these documents' outgoing links and names, remembering where the links pointed
        (inbound counts move) and the names (a link that found two documents by a name, a
        record number, finds the one left)."""
        self._changed.update(doc_ids)
        self._old_targets.update(writes.link_targets(conn, doc_ids))
        writes.delete_links(conn, doc_ids)
        self._old_keys.update(writes.name_keys_of(conn, doc_ids))
        writes.delete_document_names(conn, doc_ids)

    def resolve(self, conn, *, everything: bool) -> None:
        """Point links at their documents and recount inbound links and supersessions: every
        link of the workspace, or those the run's changes can affect (their own, those that
        pointed at them, those whose key is one of their new names)."""
        ws_id = self.ws.id
        if everything:
            writes.resolve_all_links(conn, ws_id)
            writes.recount_all_inbound(conn, ws_id)
            writes.rebuild_supersessions(conn, ws_id)
            return
        changed = sorted(self._changed)
        keys = sorted(writes.name_keys_of(conn, changed) | self._old_keys)
        affected = writes.affected_links(conn, ws_id, changed, keys)  # link id -> target before
        link_ids = sorted(affected)
        writes.resolve_links_by_rowid(conn, link_ids)
        moved = {t for t in affected.values() if t is not None} | self._old_targets
        moved.update(writes.targets_of_links(conn, link_ids))
        moved.update(changed)
        writes.recount_links_of(conn, ws_id, sorted(moved))


def _keyed(key: tuple[str, int], heading: str, line: int, relation: str) -> tuple[object, ...]:
    """A link row's tail: its key, heading, line, relation and reach (`add_links`' order)."""
    return key[0], heading, line, relation, key[1]
