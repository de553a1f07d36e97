"""Every dispatcher method, one record each: the facts every front end used to keep in sets of
its own (issue 56).

A record names the method on the wire, the engine operation that answers it (`handler`: given
the engine, the bound operation of one of its concerns; a reader and mypy follow
`engine.reading.search` to its code, no name is looked up as a string), whether it changes
the store (a long-lived server runs it on its one writer thread: `Host.call` routes by this,
for every front end), whether it takes a cancel token
or tells a caller how it goes, who may call it over HTTP, and the documentation of its params
and answer. From this table come the dispatcher's methods, the LSP's `autodoc/<method>`
requests, the HTTP server's served methods and token rights, and the README's and
doc/server.md's method tables:

    python -m autodoc.serve.method_table methods    # README.md, "### Methods"
    python -m autodoc.serve.method_table served     # doc/server.md, "## What is served"

The module loads nothing of the engine (`--help` and a server's `initialize` need none): the
handlers name the engine's operations through the engine they are given.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from autodoc.engine import Engine

HttpRight = Literal["read", "write", "log", "none"]
HTTP_WHO: dict[HttpRight, str] = {
    "read": "any token",
    "write": "a token that may write",
    "log": "a token that may write: the question log holds what every reader asked",
    "none": "nobody: the folders and their options are the server's own (`-32601`)",
}


@dataclass(frozen=True)
class Method:
    """One dispatcher method (the module's docstring says what reads each field)."""

    name: str
    handler: Callable[[Engine], Callable[..., Any]]
    writes: bool = False  # changes the store: on a long-lived server's writer thread
    cancellable: bool = False  # takes `cancel=`, checked between stages
    reports: bool = False  # tells a caller's `Reports` how it goes
    waits: bool = False  # takes `wait=`: a long-lived server passes False (embeddings follow)
    http: HttpRight = "read"  # who may call it over HTTP
    params: str = ""  # the README's columns
    result: str = ""


METHODS: tuple[Method, ...] = (
    Method(
        "workspace.add",
        lambda engine: engine.workspaces.workspace_add,
        writes=True,
        http="none",
        params="`[name, root]`",
        result="the workspace (`created: false` if it existed)",
    ),
    Method(
        "workspace.list",
        lambda engine: engine.workspaces.workspace_list,
        params="`[]`",
        result="workspaces with document and chunk counts",
    ),
    Method(
        "workspace.remove",
        lambda engine: engine.workspaces.workspace_remove,
        writes=True,
        http="none",
        params="`[name]`",
        result="`{removed: true}`",
    ),
    Method(
        "workspace.section_size",
        lambda engine: engine.workspaces.workspace_section_size,
        writes=True,
        http="none",
        params="`[name, tokens]`",
        result="as `workspace.configure`",
    ),
    Method(
        "workspace.configure",
        lambda engine: engine.workspaces.workspace_configure,
        writes=True,
        waits=True,
        http="none",
        params=(
            "`[name, {section_tokens, abstract_chunk, demote_superseded, schema, include_hidden, "
            "exclude, include, respect_gitignore, links, link_style, new_notes, max_file_mb, "
            "embedding, ranker}]`"
        ),
        result=(
            "options, the re-index (or re-embed) summary, and with `schema` the schema loaded "
            "and the facets rebuilt before the answer (`schema: {path, fields, types, error, "
            "facets_rebuilt}`)"
        ),
    ),
    Method(
        "index.run",
        lambda engine: engine.indexing.index_run,
        writes=True,
        reports=True,
        waits=True,
        http="write",
        params="`[name]`",
        result=(
            "the run summary (`IndexSummary`: files found, added, modified, deleted, skipped "
            "with reasons, `hidden`, `left_out`: what each `exclude` / `.gitignore` / `.ignore` "
            "rule left out, `ignore_files`)"
        ),
    ),
    Method(
        "index.paths",
        lambda engine: engine.indexing.index_paths,
        writes=True,
        http="none",
        params="`[name, paths]` (root-relative)",
        result=(
            "the run summary for those files alone, each indexed, or retired when it is no "
            "longer an indexable file: an editor's save, a watcher's batch"
        ),
    ),
    Method(
        "index.status",
        lambda engine: engine.indexing.index_status,
        params="`[name]`",
        result="counts, links, problems, stage states",
    ),
    Method(
        "index.check",
        lambda engine: engine.indexing.index_check,
        writes=True,
        http="write",
        params="`[name]`",
        result=(
            "index, then `findings` (`path`, `line`, `severity`, `kind`, `message`) and a "
            "`summary`; while another process writes the store, the index as it holds it, with "
            "`indexed: false` and `not_indexed` (the -32070 error: who writes it)"
        ),
    ),
    Method(
        "search.query",
        lambda engine: engine.reading.search,
        cancellable=True,
        params=(
            "`[workspace, query, {limit, stages, paths, facets, tags, mode, retrieval, window, "
            "fusion}]` (`stages`: some of `lexical`, `semantic`, `rerank`, default all that can "
            "run; `mode`: a named set, `lexical`, `semantic`, `hybrid` = both retrievers fused, "
            "`rerank` = hybrid then the ranker; `fusion`: `learned` (default), `convex`, "
            "`confidence`, `rrf`)"
        ),
        result=(
            "hits (`relevance`: the probability that its document answers, on the answer's scale "
            "whose top is its confidence — below 0.3 `none`, from 0.7 `high` — never rising down "
            "the list), `mode_used`, `semantic`, `semantic_coverage`, `stages` (spec §7), "
            "`fusion` (`model`: the ranking model's version), `filter`, `below_floor`, "
            "`missing`, `confidence`, `did_you_mean`"
        ),
    ),
    Method(
        "related",
        lambda engine: engine.reading.related,
        params="`[workspace, path, line?, {limit, include_self}]` (no line: the whole document)",
        result=(
            "the section asked about and `hits` (`path`, lines, `breadcrumb`, `snippet`, "
            "`similarity`: the absolute cosine or null, `reasons`: `similar`, `links here`, "
            "`linked from here`, `shares links`; `score` orders them), `semantic`"
        ),
    ),
    Method(
        "search.opened",
        lambda engine: engine.questions.search_opened,
        params="`[workspace, path, line?]`",
        result=(
            "`{workspace, path, line, logged}`: a reader opened this hit (the plugin's jump); a "
            "server with a question log counts its question as answered (doc/gaps.md)"
        ),
    ),
    Method(
        "gaps.report",
        lambda engine: engine.questions.gaps_report,
        http="log",
        params="`[workspace?, {since, record}]` (`since`: an ISO date or time; `record`: the "
        "baseline `check --gaps` counts from)",
        result=(
            "from the server's question log: `questions`, `answered`, `unanswered`, `groups` "
            "of unanswered questions by meaning (`count`, `question`, `questions`, `missing`, "
            "`shown` sections, `new` since the recorded report), `answered_well`; -32602 "
            "without a log"
        ),
    ),
    Method(
        "search.find",
        lambda engine: engine.reading.find,
        params="`[workspace, name, {exact, limit}]`",
        result=(
            "`matches` (`name`, `match`, `kind`, `path`, `line`, section span and breadcrumb), "
            "`truncated`"
        ),
    ),
    Method(
        "doc.read",
        lambda engine: engine.reading.doc_read,
        params=(
            "`[workspace, path, line_start, line_end]` (1-based, inclusive; null or left out: "
            "the first, the last line)"
        ),
        result=(
            "those lines, confined to the root; past 400 lines or 64 KB, `truncated` and "
            "`next_line`"
        ),
    ),
    Method(
        "doc.indexed",
        lambda engine: engine.reading.doc_indexed,
        params="`[workspace, paths]`",
        result=(
            "`indexed` and `absent`: which of the paths the index holds as documents (each once, "
            "in the order asked)"
        ),
    ),
    Method(
        "changes.since",
        lambda engine: engine.reading.changes_since,
        params="`[workspace, cursor]`",
        result="changes after the cursor, the next cursor",
    ),
    Method(
        "links.definition",
        lambda engine: engine.navigation.links_definition,
        params=(
            "`[workspace, path, line, character, {text, units}]` (`line` 1-based, `character` "
            "0-based; `text`: the line as the client has it unsaved, else the file's; `units`: "
            "`utf-32` characters (default), `utf-16` or `utf-8` code units)"
        ),
        result=(
            "the link written there (`line`, `start`, `end`) and its `target` (`path`, `line`, "
            "`title`, `heading`; null: it leads nowhere), or null where there is no link"
        ),
    ),
    Method(
        "links.hover",
        lambda engine: engine.navigation.links_hover,
        params="as `links.definition`",
        result="as `links.definition`, and `preview`: the first lines of the section linked to",
    ),
    Method(
        "links.references",
        lambda engine: engine.navigation.links_references,
        params="as `links.definition`",
        result=(
            "the document (`path`, and `heading` when on a heading or a link to one) and every "
            "place that links to it: `places` (`path`, `line`)"
        ),
    ),
    Method(
        "links.document",
        lambda engine: engine.navigation.links_document,
        params="`[workspace, path, {text, units}]` (`text`: the whole document, unsaved)",
        result=(
            "`links`: each link the index holds for the document, placed on the text (`line`, "
            "`start`, `end`, `target` or null)"
        ),
    ),
    Method(
        "doc.outline",
        lambda engine: engine.navigation.doc_outline,
        params="as `links.document`",
        result=(
            "`headings`: the document's headings in order, as the index reads them (`level`, "
            "`text`, `line`, `start`, `end` of its words, `line_end`: the section's last line)"
        ),
    ),
    Method(
        "links.diagnostics",
        lambda engine: engine.navigation.links_diagnostics,
        params="as `links.document`",
        result=(
            "`findings`: the document's links that lead nowhere, as `index.check` finds them, "
            "each spanning its line (`line`, `start`, `end`, `severity`, `kind`, `message`)"
        ),
    ),
    Method(
        "doc.actions",
        lambda engine: engine.actions.doc_actions,
        params=(
            "`[workspace, path, line, character, {text, units}]` (`text`: the whole document, "
            "unsaved)"
        ),
        result=(
            "`actions` at the position, each `kind` (`create_note` on a link that leads nowhere, "
            "`convert_url` on a bare URL, `copy_link` on a heading), `title`, the span it is "
            "about (`line`, `start`, `end`), `path` (the new note's) and `text` (the new note's "
            "text, the link replacing the URL, or the link to the section); nothing is written"
        ),
    ),
    Method(
        "doc.lenses",
        lambda engine: engine.actions.doc_lenses,
        params="as `links.document`",
        result=(
            "`lenses`: the title with how many links lead to the document, and each heading "
            "links lead to (`line`, `start`, `end`, `heading`, `links`)"
        ),
    ),
    Method(
        "links.prepare_rename",
        lambda engine: engine.renaming.links_prepare_rename,
        params=(
            "`[workspace, path, line, character, {units, open, files}]` (`open`: `{path: text}` "
            "of the documents the client has open, unsaved; `files: false`: the client cannot "
            "rename files)"
        ),
        result=(
            "what a rename there renames (`kind`: `heading`, `title` or `file`; `note`: its "
            "path) and the words to edit (`line`, `start`, `end`, `placeholder`); -32602 with "
            "the reason where nothing can be"
        ),
    ),
    Method(
        "links.rename",
        lambda engine: engine.renaming.links_rename,
        params="`[workspace, path, line, character, new_name, {units, open, files}]`",
        result=(
            "`edits` (`path`, `line`, `start`, `end`, `new_text`, on the files as they are) and "
            "`new_path` (the file to rename after them, or null) that keep every link whole; "
            "`links` rewritten, `kept` (`links + kept`: every link the index held to it), "
            "`local`, `outgoing`, `files` touched; -32602 saying which link would break (a name "
            "taken, empty, or one no link can hold); nothing is written"
        ),
    ),
    Method(
        "links.complete",
        lambda engine: engine.completion.links_complete,
        params=(
            "`[workspace, path, line, character, {text, units, limit}]` (`text`: the whole "
            "document, unsaved; `limit` 1 to 200, default 50)"
        ),
        result=(
            "what can be written there: `context` (`note`, `heading`, `block`, `path`, `anchor`, "
            "`tag`; `none`), the span an entry replaces (`line`, `start`, `end`; `replace_end`: "
            "to the end of the name), `items` in order (`label`, `kind`, `detail`, `new_text`, "
            "`filter_text`, `sort`, `path` and `line` of what it leads to), `extra` edits taken "
            "with any entry (the `[[` a Markdown link rewrites to `[`), `incomplete` (more "
            "matched than listed), `ranked_by` (`names`, `meaning`, `links`) and the `style` "
            "links are written in"
        ),
    ),
    Method(
        "links.preview",
        lambda engine: engine.completion.links_preview,
        params="`[workspace, path, line?]`",
        result=(
            "a note's `title`, the `heading` of its section at `line` and that section's first "
            "lines (`preview`): a completion entry's documentation"
        ),
    ),
    Method(
        "links.file_renamed",
        lambda engine: engine.renaming.links_file_renamed,
        params="`[workspace, old_path, new_path, {units, open}]`",
        result=(
            "as `links.rename`, for a file the client renames or moves itself; the links it "
            "cannot keep are listed in `left`"
        ),
    ),
)
BY_NAME: dict[str, Method] = {m.name: m for m in METHODS}

# What a long-lived server's host asks of the engine for itself: the folder a root is served as,
# the workspaces and stage states its status reports, the epochs a team's answers are stamped
# with, the model and indexes it opens before a first question. No front end serves them (a
# client asks `autodoc.status`, `workspace.list`, ...), and they are not a client's call (no
# trace); the host reaches the engine through these and METHODS only (`Host.engine_op`,
# tests/unit/test_method_table.py).
HOST_METHODS: tuple[Method, ...] = (
    Method("host.folder_workspace", lambda engine: engine.workspaces.workspace_for_root,
           writes=True, http="none", params="`[root]`", result="the workspace serving it"),
    Method("host.workspace_at", lambda engine: engine.workspaces.workspace_at, http="none",
           params="`[root]`", result="the workspace on this root, or null"),
    Method("host.root_holding", lambda engine: engine.workspaces.root_holding, http="none",
           params="`[folder]`", result="the deepest workspace root holding it, or null"),
    Method("host.options", lambda engine: engine.workspaces.workspace_options, http="none",
           params="`[workspace]`", result="its options"),
    Method("host.stage_state", lambda engine: engine.reading.semantic_state, http="none",
           params="`[workspace]`", result="the stage state a picker shows"),
    Method("host.counts", lambda engine: engine.reading.counts, http="none",
           params="`[workspace]`", result="(live documents, live chunks)"),
    Method("host.epochs", lambda engine: engine.reading.epochs, http="none",
           params="`[names]`", result="{name: (text epoch, vector epoch)}"),
    Method("host.warm", lambda engine: engine.reading.warm, http="none",
           params="`[workspace]`", result="null: its model and indexes open"),
    Method("host.note_question", lambda engine: engine.questions.note, http="none",
           params="`[method, params, result, asker]`", result="null: logged, when on"),
    Method("host.question_log", lambda engine: engine.questions.log_state, http="none",
           params="`[]`", result="the question log's path, or null"),
    Method("host.refuse_log_inside", lambda engine: engine.questions.refuse_inside,
           http="none", params="`[root]`", result="null; -32602 when the log is inside it"),
)  # fmt: skip
HOST_BY_NAME: dict[str, Method] = {m.name: m for m in HOST_METHODS}


def methods_table() -> str:
    """The README's table of methods."""
    rows = ["| method | params | result |", "|---|---|---|"]
    rows += [f"| `{m.name}` | {m.params} | {m.result} |" for m in METHODS]
    return "\n".join(rows) + "\n"


def served_table() -> str:
    """doc/server.md's table of who may call which method over HTTP."""
    rows = ["| methods | who |", "|---|---|"]
    for right, who in HTTP_WHO.items():
        names = ", ".join(f"`{m.name}`" for m in METHODS if m.http == right)
        rows.append(f"| {names} | {who} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    views = {"methods": methods_table, "served": served_table}
    if sys.argv[1:] not in ([v] for v in views):
        sys.exit(f"usage: python -m autodoc.serve.method_table {{{'|'.join(views)}}}")
    sys.stdout.write(views[sys.argv[1]]())
