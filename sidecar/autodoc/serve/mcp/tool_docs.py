"""What a model reads about the MCP server: its instructions and each tool's description.

Kept apart from the adapter (`mcp_server.py`) because it is text for an agent, tuned on how
agents use the tools, not code."""

INSTRUCTIONS = (
    "AutoDoc searches a Markdown knowledge base (notes, ADRs, design docs, manuals). "
    "Use `search` for questions in words, `find` when you know a name (a document title, "
    "heading, function, class or constant), then `read_span` to read just the lines a hit "
    "points at. `related` lists the sections near one you have read (by meaning and by links). "
    "`status` lists the workspaces and whether indexing is still running."
)


SEARCH_DOC = """Search the knowledge base by meaning and by words; the best sections first.

Returns `hits`, each with `path`, `line_start`-`line_end` (1-based, inclusive), `breadcrumb`
(document title › headings), `snippet`, `relevance` (0-1, comparable within one answer) and `via`
(what found it: lexical, semantic, exact when the query is the document's title or alias,
rank when the reranker ordered it, facet for a filters-only query), plus `stages` (which ran,
which were skipped and why), `confidence` (high, low, or none: the knowledge base holds no
answer) and `missing` (query words that occur nowhere in it). Read a hit with
`read_span(path, line_start, line_end)` rather than the whole file. Ask for few hits (`limit`,
default 5, at most 100). Prefer `find` when you know a name. A query holds at most 4,000
characters and 64 words.
The query may carry filters on frontmatter fields the vault declares: `status:accepted`,
`-status:superseded`, `tag:security`, `type:adr`, `date:2024`."""

READ_SPAN_DOC = """Read lines of one file of the knowledge base: exactly `line_start`..`line_end`.

Use the span of a `search` hit or a `find` match. Returns `text`, the lines returned and
`lines_total`. One call returns at most 400 lines or 64 KB of text: a longer span comes back
with `truncated: true` and `next_line`, the `line_start` to ask for next. Line numbers are
integers. Paths are relative to the workspace root and cannot leave it."""

FIND_DOC = """Look a name up: a document title or alias, a heading, or a code identifier.

Case-insensitive and aware of camelCase, PascalCase and snake_case parts: `orderRequest`,
`order` or `place order` find `placeOrderRequest`; `WebAuth` finds `GetWebAuthnSession`;
`strcpy_s`, `CWnd`. Returns `matches` ordered exact, then prefix, then partial, each with the
matched `name`, its `kind` (title, alias, heading, identifier), `path`, `line`, and the section
around it (`line_start`-`line_end`, `breadcrumb`) to pass to `read_span`. `exact=true` keeps
whole-name matches. `limit`: default 5, at most 100. `truncated` says the name was too short
to list every candidate."""

STATUS_DOC = """What this server searches: `workspaces`, the ones it serves first (`served`),
each with its name and root, documents and chunks indexed, `indexing` (still running, ready, or
why not), the semantic stage's state (ready, partial with coverage, off with the reason) and the
reranker's (`rank.state`); `server.writer` is false while another process writes the store, and
`refused` lists folders that could not be served. Call it to choose a workspace or when answers
look empty."""


GAPS_DOC = """What the knowledge base did not answer, from this server's question log (off unless
the server was started with `--log-questions`): the questions whose answer was not confident and
whose hits nobody opened, grouped by meaning, largest first. Each group has `count`, its most
central `question` and other wordings, `missing` words found nowhere, and the sections `shown`
but not opened. `since`: an ISO date. Use it to see what to write next."""


RELATED_DOC = """Sections related to one section (give `line`) or to a whole document (omit it): the
nearest by meaning across the knowledge base, and the documents linked to or from it.

Each hit has `path`, `line_start`..`line_end` (read it with `read_span`), `breadcrumb`, a
`snippet`, `reasons` (`similar`, `links here`, `linked from here`, `shares links`) and
`similarity`, the cosine of the two sections (absolute: near 1 is the same topic, below about
0.3 is unrelated; null when only links relate them). The document's own sections are left out.
Use it to gather context around an answer, or to find what else was decided on a topic."""
