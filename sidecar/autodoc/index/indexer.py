"""Incremental indexing: scan, parse, chunk, and publish new generations atomically.

The write protocol keeps SQLite and Tantivy consistent for readers and after a crash:

1. SQLite: new chunks are inserted as PENDING (invisible).
2. Tantivy: the new chunks are added and committed.
3. SQLite, one transaction: new chunks become LIVE, replaced ones DEAD, each changed document's
   generation goes up and the change log grows. This is the moment readers switch.
4. Later (after a grace period, so a reader that took its snapshot just before step 3 still
   finds its chunks): DEAD chunks leave Tantivy, then their rows go.

A crash leaves at worst PENDING or DEAD rows, which `reconcile` removes from both stores.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections import defaultdict
from collections.abc import Callable

from autodoc.bm25.analyzer import Lexical, LexicalDoc
from autodoc.files.confine import names_file, read_inside
from autodoc.files.ignore_rules import RuleOptions, Rules
from autodoc.files.walker import FoundFile, Hidden, find, is_utf8, scan
from autodoc.index import facet_values, name_index
from autodoc.index.run_records import DocumentUpdate, PublishPlan, RunSummary
from autodoc.links.link_graph import LinkGraph, Published
from autodoc.parse import frontmatter_schema, names
from autodoc.parse.chunking import CHUNKING_FORMAT, Chunker
from autodoc.parse.document import READING_FORMAT, ParsedDocument, parse_document
from autodoc.parse.markdown import STRUCTURE_FORMAT
from autodoc.store import (
    Store,
    Workspace,
    reads,
    writes,
)
from autodoc.wire import workspace_options

RETIRE_GRACE_S = 10.0  # how long a retired chunk stays findable for readers mid-query
BATCH_DOCUMENTS = 500

Progress = Callable[[int, int, str], None]


def _meta_fp(parsed: ParsedDocument) -> str:
    """Document fields copied into every chunk's lexical entry; if they change, all chunks do."""
    blob = json.dumps([parsed.title, parsed.aliases, parsed.tags], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class Indexer:
    def __init__(self, store: Store, lexical: Lexical, ws: Workspace) -> None:
        self.store = store
        self.lexical = lexical
        self.ws = ws
        self.chunker = Chunker(ws.options["section_tokens"], ws.options["abstract_chunk"])
        # How a document is read, cut and which names it yields: a document read under another
        # fingerprint is read again.
        self._base_fp = self.chunk_fp = (
            f"{workspace_options.chunking_fingerprint(ws.options)},{STRUCTURE_FORMAT},{names.INDEX_FORMAT},"
            f"{CHUNKING_FORMAT},{READING_FORMAT}"
        )
        self.max_bytes = ws.options["max_file_mb"] * 1_000_000
        self.rule_options = RuleOptions.of(ws.options)  # what the walk and saves leave out
        self.links = LinkGraph(store, ws, self._is_file)  # how its links read, and their upkeep
        self.schema = frontmatter_schema.EMPTY
        self.facets_rebuilt = 0  # documents whose facets the last schema change rebuilt

    # -- the frontmatter schema ------------------------------------------------------------

    def sync_schema(self) -> tuple[str, str] | None:
        """Load the schema when its file changed; a schema that does not parse is reported and
        the previous one stays in force. Returns (path, message) while the file is bad."""
        shown, path = frontmatter_schema.schema_location(
            self.ws.root, self.ws.options.get("schema")
        )
        try:
            data: bytes | None = path.read_bytes()
        except FileNotFoundError:
            data = None
        except OSError as exc:
            return shown, f"cannot read the schema: {exc.strerror or exc}"
        digest = frontmatter_schema.schema_hash(data) if data is not None else ""
        with self.store.snapshot() as conn:
            row = writes.loaded_schema(conn, self.ws.id)
        if row is not None and row["path"] == str(path) and row["content_hash"] == digest:
            self.schema = frontmatter_schema.schema_of(row["schema"])
            return (shown, row["error"]) if row["error"] else None
        error = ""
        schema = (
            frontmatter_schema.schema_of(row["schema"])
            if row is not None
            else frontmatter_schema.EMPTY
        )
        if data is None:
            schema = frontmatter_schema.EMPTY
        else:
            from autodoc.parse.schema_file import parse_schema  # PyYAML: only with a schema file

            try:
                schema = parse_schema(data.decode("utf-8"))
            except UnicodeDecodeError as exc:
                error = f"line 1: not UTF-8 (byte {exc.start})"
            except frontmatter_schema.SchemaError as exc:
                error = str(exc)
        changed = row is None or row["schema"] != schema.to_json()
        with self.store.transaction() as conn:
            writes.save_schema(
                conn, self.ws.id, str(path), digest, schema.to_json(), error, time.time()
            )
            if changed:  # filters read the table in their snapshot: nothing else to refresh
                self.facets_rebuilt = facet_values.rebuild_facets(conn, self.ws.id, schema)
        self.schema = schema
        return (shown, error) if error else None

    # -- crash recovery --------------------------------------------------------------------

    def reconcile(self) -> dict[str, int]:
        """Remove what an interrupted writer left: PENDING rows, and DEAD rows past grace."""
        with self.store.snapshot() as conn:
            pending = writes.pending_chunks(conn, self.ws.id)
            live = writes.live_chunk_count(conn, self.ws.id)
        rebuilt = 0
        if pending:
            self.lexical.delete(pending)
            self.lexical.commit()
            with self.store.transaction() as conn:
                writes.delete_chunks(conn, pending)
        if self.lexical.num_docs() < live or not self.lexical.format_ok:
            rebuilt = self.rebuild_lexical()  # lost, truncated, or written by an older format
        purged = self.purge_retired(grace=RETIRE_GRACE_S)
        return {"pending_removed": len(pending), "retired_purged": purged, "rebuilt": rebuilt}

    def rebuild_lexical(self) -> int:
        """Refill Tantivy from SQLite, the source of truth."""
        self.lexical.delete_all()
        with self.store.snapshot() as conn:
            rows = writes.lexical_rows(conn, self.ws.id)
            n = self.lexical.add(
                LexicalDoc(
                    r["id"],
                    r["document_id"],
                    r["title"],
                    r["breadcrumb"],
                    json.loads(r["aliases"]),
                    json.loads(r["tags"]),
                    r["text"],
                    r["path"],
                )
                for r in rows
            )
        self.lexical.commit()
        self.lexical.mark_format()
        self._bump_epoch()
        return n

    def purge_retired(self, grace: float) -> int:
        cutoff = time.time() - grace
        with self.store.snapshot() as conn:
            dead = writes.retired_chunks(conn, self.ws.id, cutoff)
        if not dead:
            return 0
        self.lexical.delete(dead)
        self.lexical.commit()
        with self.store.transaction() as conn:
            writes.delete_chunks(conn, dead)
            self._bump_epoch(conn)
        return len(dead)

    def _bump_epoch(self, conn=None) -> None:
        if conn is not None:
            writes.bump_lexical_epoch(conn, self.ws.id)
        else:
            with self.store.transaction() as c:
                writes.bump_lexical_epoch(c, self.ws.id)

    # -- a run -----------------------------------------------------------------------------

    # Over 60 lines: the run's steps in order, each one call; the summary filled as they go.
    def run(
        self,
        progress: Progress | None = None,
        force: bool = False,
        paths: list[str] | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> RunSummary:
        """Bring the index up to date with the files: all of them, or only `paths` (root-relative;
        one that is gone, or is no longer indexable, is retired). `notice` hears what a person
        should be told before the run goes on (resuming an interrupted run)."""
        started = time.perf_counter()
        summary = RunSummary(self.ws.name)
        self.links.start_run()
        self._unchanged: set[str] = set()  # not parsed again: their stored warnings stand
        hidden = Hidden()
        rules = Rules(os.path.realpath(self.ws.root), self.rule_options)
        if paths is None:
            with self.store.transaction() as conn:
                interrupted = writes.start_run(conn, self.ws.id, time.time())
            self.reconcile()
            files, skipped = scan(self.ws.root, self.max_bytes, hidden=hidden, rules=rules)
        else:
            self.purge_retired(grace=RETIRE_GRACE_S)
            files, skipped = find(self.ws.root, paths, self.max_bytes, rules=rules)
            paths = [p for p in paths if is_utf8(p)]  # the others were skipped with a reason
        bad_schema = self.sync_schema()
        dialect = self.links.decide() if paths is None else self.links.dialect
        # which fields hold links, and the vault's dialect, are part of how a file is read
        self.chunk_fp = f"{self._base_fp},{dialect.fingerprint}"
        if self.schema.link_fields:
            self.chunk_fp += f",linkfields={','.join(self.schema.link_fields)}"
        summary.files = len(files)
        summary.skipped = [{"path": s.path, "reason": s.reason} for s in skipped]
        summary.hidden = {"count": hidden.count, "examples": hidden.examples}
        summary.left_out, summary.ignore_files = rules.report(), sorted(rules.files_read)
        known = self._known(paths)
        if paths is None and interrupted:
            already = sum(self._current(known.get(f.rel), f) for f in files)
            summary.resumed = {"already": already, "files": len(files)}
            if notice is not None:
                notice(f"resuming: {already:,} of {len(files):,} files already indexed")
        problems: list[tuple[str, str, str]] = [(s.path, "skipped", s.reason) for s in skipped]
        if paths is None:  # an ignore file's bad lines: reported once a walk, not every save
            for path, message in rules.problems:
                summary.warnings.append({"path": path, "message": message})
                problems.append((path, "warning", message))
        if bad_schema is not None:
            summary.warnings.append({"path": bad_schema[0], "message": bad_schema[1]})
            problems.append((bad_schema[0], "schema", bad_schema[1]))
        touched = self._read_files(files, known, force, progress, summary, problems)
        self._record(paths, touched, problems, summary)
        if summary.added or summary.modified or summary.deleted:
            writes.optimize(self.store.writer())  # statistics for the query planner
        if paths is None:  # a save (`paths`): don't count the whole workspace every time
            summary.documents, summary.chunks = self._counts()
        else:
            summary.documents = summary.chunks = None
        summary.seconds = round(time.perf_counter() - started, 3)
        if paths is None and self.links.reads_label_first():  # read again, label first: once
            return self.run(progress, force, None, notice)
        return summary

    def _known(self, paths: list[str] | None) -> dict[str, sqlite3.Row]:
        """What the store holds of these paths (None: every path of the workspace)."""
        with self.store.snapshot() as conn:
            return writes.known_documents(conn, self.ws.id, paths)

    def _read_files(
        self,
        files: list[FoundFile],
        known: dict[str, sqlite3.Row],
        force: bool,
        progress: Progress | None,
        summary: RunSummary,
        problems: list[tuple[str, str, str]],
    ) -> list[tuple[int, int, int]]:
        """Parse and publish every file whose content changed, in batches; retire the known
        paths not seen. Returns the unchanged files with a new stat: (size, mtime, id)."""
        updates: list[DocumentUpdate] = []
        touched: list[tuple[int, int, int]] = []
        seen: set[str] = set()
        for n, f in enumerate(files, 1):
            if progress:
                progress(n, len(files), f.rel)
            seen.add(f.rel)
            row = known.get(f.rel)
            current = row is not None and not row["deleted"] and row["chunk_fp"] == self.chunk_fp
            if not force and self._current(row, f):
                summary.unchanged += 1
                self._unchanged.add(f.rel)
                continue
            try:
                data, _ = read_inside(self.ws.root, f.rel, self.max_bytes)
            except (OSError, ValueError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                summary.skipped.append({"path": f.rel, "reason": reason})
                problems.append((f.rel, "skipped", reason))
                seen.discard(f.rel)
                continue
            content_hash = hashlib.sha256(data).hexdigest()
            if current and row is not None and not force and row["content_hash"] == content_hash:
                summary.unchanged += 1
                self._unchanged.add(f.rel)
                touched.append((f.size, f.mtime_ns, row["id"]))
                continue
            updates.append(self._update(f, data, content_hash, summary, problems))
            if len(updates) >= BATCH_DOCUMENTS:
                self._publish(updates, [], summary)
                updates = []
        gone = [p for p, r in known.items() if not r["deleted"] and p not in seen]
        self._publish(updates, gone, summary)
        return touched

    def _current(self, row: sqlite3.Row | None, f: FoundFile) -> bool:
        """Stored as it is on disk (same stat), read the way this indexer reads."""
        return (
            row is not None
            and not row["deleted"]
            and row["chunk_fp"] == self.chunk_fp
            and row["size"] == f.size
            and row["mtime_ns"] == f.mtime_ns
        )

    def _update(
        self,
        f: FoundFile,
        data: bytes,
        content_hash: str,
        summary: RunSummary,
        problems: list[tuple[str, str, str]],
    ) -> DocumentUpdate:
        """A changed file parsed, chunked and its names collected; its warnings reported."""
        label_first = self.links.dialect.label_first
        parsed = parse_document(data, f.rel, self.schema.link_fields, label_first)
        self.links.read(f.rel, parsed)
        for message in parsed.problems:
            summary.warnings.append({"path": f.rel, "message": message})
            problems.append((f.rel, "warning", message))
        return DocumentUpdate(
            f,
            parsed,
            self.chunker.chunk(parsed),
            content_hash,
            self.chunk_fp,
            _meta_fp(parsed),
            names.document_symbols(parsed),
        )

    def _record(
        self,
        paths: list[str] | None,
        touched: list[tuple[int, int, int]],
        problems: list[tuple[str, str, str]],
        summary: RunSummary,
    ) -> None:
        """One transaction: new stats, this run's problems, the links the changes affect, the
        run's time, the change log pruned."""
        with self.store.transaction() as conn:
            if touched:
                writes.update_document_stats(conn, touched)
            if paths is None:
                summary.warnings_kept = writes.clear_problems(conn, self.ws.id, self._unchanged)
            else:
                writes.clear_problems_of(conn, self.ws.id, set(paths) - self._unchanged)
            writes.add_problems(conn, self.ws.id, problems)
            if summary.added or summary.modified or summary.deleted:
                # a few documents changed: re-resolve only what they can affect
                self.links.resolve(conn, everything=paths is None)
            now = time.time()
            writes.mark_indexed(conn, self.ws.id, now, full=paths is None)
            self.store.prune_changes(conn, now)

    def _counts(self) -> tuple[int, int]:
        """(live documents, live chunks) of the workspace."""
        with self.store.snapshot() as conn:
            docs, chunks = reads.workspace_counts(conn, self.ws.id)
        return docs, chunks

    def _publish(self, updates: list[DocumentUpdate], gone: list[str], summary: RunSummary) -> None:
        if not updates and not gone:
            return
        now = time.time()
        with self.store.transaction() as conn:  # step 1
            plans = self._plan(conn, updates)
            writes.add_pending_chunks(
                conn,
                self.ws.id,
                [
                    (cid, p.doc_id, p.generation, ch.kind, ch.ordinal, ch.breadcrumb, ch.text,
                     ch.text_hash, ch.byte_start, ch.byte_end, ch.line_start, ch.line_end,
                     ch.line, json.dumps(ch.headings))
                    for p in plans
                    for cid, ch in p.new
                ],
            )  # fmt: skip
        added = self.lexical.add(  # step 2
            LexicalDoc(cid, p.doc_id, p.update.parsed.title, ch.breadcrumb,
                       p.update.parsed.aliases, p.update.parsed.tags, ch.text, p.update.file.rel)
            for p in plans
            for cid, ch in p.new
        )  # fmt: skip
        if added:
            self.lexical.commit()
        with self.store.transaction() as conn:  # step 3: readers switch here
            self._switch(conn, plans, now)
            self._retire(conn, gone, now, summary)
            self._bump_epoch(conn)  # readers: reload the searcher, recount coverage
        for p in plans:
            summary.added += p.created
            summary.modified += not p.created
            summary.chunks_written += len(p.new)
            summary.chunks_kept += len(p.kept)

    def _plan(self, conn, updates: list[DocumentUpdate]) -> list[PublishPlan]:
        """Give each changed document its next generation; keep chunks whose text is unchanged."""
        ws_id = self.ws.id
        rows = writes.documents_to_plan(conn, ws_id, [u.file.rel for u in updates])
        reusable: dict[int, dict[tuple[str, str], list[int]]] = defaultdict(
            lambda: defaultdict(list)
        )
        keep_from = [
            r["id"]
            for u in updates
            if (r := rows.get(u.file.rel)) is not None
            and not r["deleted"]
            and r["meta_fp"] == u.meta_fp
        ]
        for old in writes.reusable_chunks(conn, keep_from):
            reusable[old["document_id"]][(old["kind"], old["text_hash"])].append(old["id"])
        writes.add_placeholder_documents(
            conn, ws_id, [u.file.rel for u in updates if u.file.rel not in rows]
        )
        fresh = writes.document_ids(
            conn, ws_id, [u.file.rel for u in updates if u.file.rel not in rows]
        )
        next_id = writes.next_chunk_id(conn)
        plans = []
        for u in updates:
            row = rows.get(u.file.rel)
            if row is None:
                plan = PublishPlan(u, fresh[u.file.rel], 1, True)
            else:
                plan = PublishPlan(u, row["id"], row["generation"] + 1, bool(row["deleted"]))
            old = reusable.get(plan.doc_id, {})
            for ch in u.chunks:
                ids = old.get((ch.kind, ch.text_hash))
                if ids:
                    plan.kept[ids.pop(0)] = ch
                else:
                    plan.new.append((next_id, ch))
                    next_id += 1
            plans.append(plan)
        return plans

    def _switch(self, conn, plans: list[PublishPlan], now: float) -> None:
        """New chunks live, replaced ones retired, documents at their new generation."""
        writes.publish_documents(
            conn,
            [
                (p.generation, p.update.file.size, p.update.file.mtime_ns, p.update.content_hash,
                 p.update.chunk_fp, p.update.meta_fp, p.update.parsed.title,
                 json.dumps(p.update.parsed.tags), json.dumps(p.update.parsed.aliases),
                 json.dumps(p.update.parsed.meta, ensure_ascii=False),
                 json.dumps([(h.line + 1, h.level, h.text) for h in p.update.parsed.headings],
                            ensure_ascii=False), now, p.doc_id)
                for p in plans
            ],
        )  # fmt: skip
        facet_values.write_facets(
            conn,
            self.ws.id,
            self.schema,
            [(p.doc_id, p.update.file.rel, p.update.parsed.meta, p.update.parsed.tags)
             for p in plans],
        )  # fmt: skip
        replaced = [p.doc_id for p in plans if not p.created]
        writes.retire_live_chunks(conn, replaced, now)
        writes.make_chunks_live(
            conn,
            [
                (p.generation, ch.ordinal, ch.byte_start, ch.byte_end, ch.line_start,
                 ch.line_end, ch.line, json.dumps(ch.headings), cid)
                for p in plans
                for cid, ch in (*p.kept.items(), *p.new)
            ],
        )  # fmt: skip
        self.links.replace(
            conn,
            [Published(p.doc_id, p.update.file.rel, p.update.parsed, p.created) for p in plans],
        )
        name_index.write_documents(
            conn, self.ws.id, [(p.doc_id, p.update.symbols) for p in plans], replaced
        )
        writes.log_changes(
            conn,
            [
                (now, self.ws.id, p.update.file.rel, "add" if p.created else "modify", p.generation)
                for p in plans
            ],
        )

    def _retire(self, conn, gone: list[str], now: float, summary: RunSummary) -> None:
        """Deleted files: a new generation with no chunks, and a `delete` in the change log."""
        for path in gone:
            row = writes.document_at(conn, self.ws.id, path)
            gen = row["generation"] + 1
            writes.mark_document_deleted(conn, row["id"], gen, now)
            writes.retire_document_chunks(conn, row["id"], now)
            self.links.forget(conn, [row["id"]])
            name_index.forget_documents(conn, self.ws.id, [row["id"]])
            writes.delete_document_facets(conn, row["id"])
            writes.log_deletion(conn, self.ws.id, path, gen, now)
            summary.deleted += 1

    def _is_file(self, rel: str) -> bool:
        return names_file(self.ws.root, rel)
