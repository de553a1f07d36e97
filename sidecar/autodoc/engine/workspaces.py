"""Workspaces: add, find by root, list, configure (re-chunking or re-embedding when an option
asks), remove with everything of theirs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from autodoc import store as sql
from autodoc.bm25.tantivy_index import LexicalIndex
from autodoc.engine.core import EngineCore, lexical_home, lexical_store, store_spec
from autodoc.engine.indexing import Indexing
from autodoc.parse import frontmatter_schema
from autodoc.store import Workspace
from autodoc.wire import protocol, workspace_options


class Workspaces:
    """Adding, configuring and removing workspaces; configuring may re-index, so it holds
    the indexing concern."""

    def __init__(self, core: EngineCore, indexing: Indexing) -> None:
        self.core = core
        self.indexing = indexing

    def workspace_add(self, name: Any, root: Any) -> protocol.WorkspaceAdded:
        """Add a workspace; one already there with this name and root is answered as it is,
        without the writer lease (`autodoc check` beside an editor's server)."""
        existing = self._added(name, root)
        if existing is not None:
            return protocol.WorkspaceAdded(**self.core.describe(existing), created=False)
        with self.core.writing:
            ws, created = self.core.store.add_workspace(name, root)
        return protocol.WorkspaceAdded(**self.core.describe(ws), created=created)

    def _added(self, name: Any, root: Any) -> Workspace | None:
        """The workspace `name` if it exists on this very folder (else None: adding it checks
        the arguments and says what is wrong)."""
        if not isinstance(name, str) or not isinstance(root, str) or not root:
            return None
        real = Path(root).expanduser().resolve()
        for ws in self.core.store.workspaces():
            if ws.name == name and Path(ws.root) == real and real.is_dir():
                return ws
        return None

    def workspace_at(self, root: Path) -> str | None:
        """The workspace whose root is this folder, if any."""
        real = root.resolve()
        for ws in self.core.store.workspaces():
            if Path(ws.root) == real:
                return ws.name
        return None

    def root_holding(self, folder: Path) -> Path | None:
        """The root of the deepest workspace that is this folder or holds it, if any."""
        real = folder.resolve()
        roots = [Path(ws.root) for ws in self.core.store.workspaces()]
        held = [r for r in roots if r == real or r in real.parents]
        return max(held, key=lambda r: len(r.parts)) if held else None

    def workspace_options(self, name: Any) -> dict[str, Any]:
        """A workspace's options, as stored (defaults filled in)."""
        return self.core.workspace(name).options

    def workspace_for_root(self, root: Path) -> str:
        """The workspace on this folder: the existing one, or a new one named after it."""
        existing = self.workspace_at(root)
        if existing is not None:
            return existing
        real = root.resolve()
        base = re.sub(r"[^A-Za-z0-9._-]+", "-", real.name).strip("-.")[:56] or "workspace"
        taken = {ws.name for ws in self.core.store.workspaces()}
        name, n = base, 2
        while name in taken:
            name, n = f"{base}-{n}", n + 1
        self.workspace_add(name, str(real))
        return name

    def workspace_list(self) -> list[protocol.WorkspaceInfo]:
        return [self.core.describe(ws) for ws in self.core.store.workspaces()]

    def workspace_remove(self, name: Any) -> dict[str, Any]:
        with self.core.writing:
            return self._workspace_remove(name)

    def _workspace_remove(self, name: Any) -> dict[str, Any]:
        self.core.store.writer()  # take the lease before touching anything
        ws = self.core.store.remove_workspace(name)
        with self.core.lock:
            held = self.core.lexical_indexes.pop(ws.id, None)
            if held is not None:
                held[1].close()
        if lexical_store(ws) is not None:  # its collection goes, opened here or not
            self.core.open_lexical(ws).drop()
        for local in (str(ws.id), f"{ws.id}.qdrant"):
            LexicalIndex.destroy(self.core.store.lexical_root / local)
        self._drop_remote_vectors(ws)
        for path in self.core.store.vectors_root.glob(f"{ws.id}-*"):
            path.unlink(missing_ok=True)
        return {"name": ws.name, "removed": True}

    def _drop_remote_vectors(self, ws: Workspace) -> None:
        """A removed workspace's vectors in Qdrant go too, whether or not this process had
        opened them (a one-shot `--call workspace.remove`)."""
        if store_spec(ws)["kind"] == "qdrant":
            embedder, _ = self.core.embedder(ws)
            if embedder is not None:
                self.core.signs(ws, embedder)  # opened if it was not
        with self.core.lock:
            for key in [k for k in self.core.sign_indexes if k[0] == ws.id]:
                drop = getattr(self.core.sign_indexes.pop(key), "drop", None)
                if drop is not None:
                    drop()

    def workspace_configure(self, name: Any, changes: Any, *, wait: bool = True) -> dict[str, Any]:
        """Set options in one transaction; re-chunk when a chunking option changed."""
        with self.core.writing:
            return self._workspace_configure(name, changes, wait)

    def _workspace_configure(self, name: Any, changes: Any, wait: bool) -> dict[str, Any]:
        ws = self.core.workspace(name)
        clean = workspace_options.validate(changes)
        if all(ws.options.get(k) == v for k, v in clean.items()) and (
            self.core.store.lease.held_elsewhere()
        ):  # nothing to change, and another process keeps the store: answer without writing
            return self._configured_as_is(ws, "schema" in clean)
        rechunk = any(
            (workspace_options.OPTIONS[k].rechunk or workspace_options.OPTIONS[k].rescan)
            and ws.options.get(k) != v
            for k, v in clean.items()
        )
        before = ws
        ws = self.core.store.set_options(ws, clean)
        if lexical_home(ws) != lexical_home(before) and ws.indexed_at is not None:
            self._move_lexical(before, ws)
        summary = None
        if rechunk and ws.indexed_at is not None:
            summary = self.indexing.index_run(ws.name, wait=wait)
        elif "embedding" in clean and ws.indexed_at is not None:
            if wait:
                summary = {"embedding": self.indexing.embed_run(ws.name)}
            else:
                self.indexing.embed_in_background(ws.name)
                summary = {"embedding": {"background": True}}
        out = {**self.core.describe(self.core.workspace(ws.name)), "reindexed": summary}
        if "schema" in clean:
            out["schema"] = self._load_schema(self.core.workspace(ws.name))
        return out

    def _configured_as_is(self, ws: Workspace, schema: bool) -> dict[str, Any]:
        """A configure that changes nothing, answered from the store as it is: the schema as
        the lease holder loaded it (it reloads the file when the file changes)."""
        out: dict[str, Any] = {**self.core.describe(ws), "reindexed": None}
        if schema:
            with self.core.store.snapshot() as conn:
                stored, error = sql.stored_schema(conn, ws.id), sql.schema_error(conn, ws.id)
            shown, _ = frontmatter_schema.schema_location(ws.root, ws.options.get("schema"))
            state = frontmatter_schema.schema_state(shown, stored, error)
            out["schema"] = protocol.SchemaLoaded(**state, facets_rebuilt=0)
        return out

    def _move_lexical(self, before: Workspace, after: Workspace) -> None:
        """The lexical index moved (to Qdrant, back, or to another one): the old one goes
        first, so a move cut short never leaves a stale index to come back to; the new one is
        filled now (a reconcile refills it if this is cut short)."""
        from autodoc.index.indexer import Indexer  # here: a search loads no indexer (issue 45)

        self.core.store.writer()
        with self.core.lock:
            held = self.core.lexical_indexes.pop(before.id, None)
        (held[1] if held is not None else self.core.open_lexical(before)).drop()
        Indexer(self.core.store, self.core.lexical(after), after).rebuild_lexical()

    def _load_schema(self, ws: Workspace) -> protocol.SchemaLoaded:
        """Load the schema the option names and rebuild the facets it types, before the answer:
        a filter on a new field works at once, not after the next re-index."""
        from autodoc.index.indexer import Indexer

        self.core.store.writer()
        indexer = Indexer(self.core.store, self.core.lexical(ws), ws)
        bad = indexer.sync_schema()
        shown, _ = frontmatter_schema.schema_location(ws.root, ws.options.get("schema"))
        state = frontmatter_schema.schema_state(shown, indexer.schema, bad[1] if bad else "")
        return protocol.SchemaLoaded(**state, facets_rebuilt=indexer.facets_rebuilt)

    def workspace_section_size(self, name: Any, tokens: Any) -> dict[str, Any]:
        return self.workspace_configure(name, {"section_tokens": tokens})
