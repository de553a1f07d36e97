"""The wire: every object AutoDoc sends a client, typed once.

The CLI (`autodoc --call`), the LSP server (`autodoc/<method>`, notifications), the MCP server and
the tests see these shapes. Code builds them through these types (mypy checks every key), and
the tests validate real answers against them with nothing extra allowed (`conform`). The
LuaCATS classes in `lua/autodoc/types.lua` are generated from this file:

    python -m autodoc.wire.schema_views lua > lua/autodoc/types.lua

and `python -m autodoc.wire.schema_views schema` prints the JSON Schema of every object for other
clients.
Error codes live in `errors.py`; `ErrorObject` is their shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, NotRequired

from typing_extensions import TypedDict

from autodoc.wire.action_answers import ACTION_TYPES
from autodoc.wire.file_rules import FILE_RULE_TYPES, FileRules
from autodoc.wire.gap_answers import GAP_TYPES
from autodoc.wire.link_answers import LINK_TYPES
from autodoc.wire.rename_answers import RENAME_TYPES
from autodoc.wire.wire_type import wire_type

if TYPE_CHECKING:
    from pydantic import TypeAdapter

# Attribute docstrings become the fields' descriptions (JSON Schema, types.lua).
_WIRE = wire_type

StageName = Literal["lexical", "semantic", "rerank"]
SemanticStateName = Literal["ready", "partial", "off", "switching"]
RankStateName = Literal["ready", "off", "skipped", "failed"]
ModeUsed = Literal["lexical", "semantic", "hybrid", "facet", "none"]
Via = Literal["lexical", "semantic", "exact", "rank", "facet"]
ConfidenceLevel = Literal["high", "low", "none"]
LeaseState = Literal["writer", "read-only", "taking over"]
Intent = Literal["phrase", "prefix", "path", "number", "identifier", "question", "words"]
# `search.query`'s `fusion` option
FusionName = Literal["learned", "convex", "confidence", "rrf"]
FUSIONS: tuple[FusionName, ...] = ("learned", "convex", "confidence", "rrf")
DEFAULT_FUSION: FusionName = "learned"


# -- search.query --------------------------------------------------------------------------------


@_WIRE
class HeadingAt(TypedDict):
    """A heading a hit's span holds."""

    line: int
    """1-based."""
    text: str


@_WIRE
class Hit(TypedDict):
    """One section that answers: where it is, what it says, and how it was found."""

    path: str
    """Root-relative, `/`-separated."""
    title: str
    breadcrumb: str
    """The document title, then the headings above the section, joined by ` › `."""
    snippet: str
    """About 220 characters around the first matched word, whitespace collapsed."""
    highlights: list[list[int]]
    """[start, end) character offsets of matched words in `snippet`."""
    byte_start: int
    byte_end: int
    line_start: int
    """1-based, inclusive."""
    line_end: int
    """1-based, inclusive."""
    line: int
    """The line a row shows and jumps to: the heading the breadcrumb ends with (a section
    merged with a metadata stub above it starts at the stub), else `line_start`."""
    headings: list[HeadingAt]
    """Every heading in the span, in order: a merged stub's too, so each is visible."""
    relevance: float
    """0..1, never above the row before. `learned`: the calibrated probability that it answers
    (an exact title or alias: 1.0); else 1.0 is first place in every stage that ran."""
    score: float
    """The fused score, for ordering only."""
    via: list[Via]
    """The stages that found it."""
    generation: int
    """The document's generation the hit was read from."""
    chunk_id: int
    kind: str
    superseded_by: NotRequired[str]
    """Set when a newer document supersedes this one: its path."""
    rank_score: NotRequired[float]
    """The cross-encoder's score, when the rerank stage ran."""


RelatedReason = Literal["similar", "links here", "linked from here", "shares links"]


@_WIRE
class RelatedHit(TypedDict):
    """A section related to the one asked about, and why."""

    path: str
    title: str
    breadcrumb: str
    snippet: str
    line_start: int
    line_end: int
    line: int
    """The line a row shows and jumps to (as `Hit.line`)."""
    chunk_id: int
    score: float
    """For ordering only: the similarity, plus 0.15 for each link between the two documents
    and 0.05 for each link target they share (at most three)."""
    similarity: float | None
    """The cosine of the two sections' stored vectors (absolute, comparable across answers);
    None when only links relate them."""
    reasons: list[RelatedReason]
    shared_links: int
    """How many link targets the two documents share."""


@_WIRE
class RelatedAnswer(TypedDict):
    """`related`: the section at `path:line` (or the whole document) and its neighbours, from
    the stored vectors and the link graph; nothing is embedded."""

    workspace: str
    root: str
    path: str
    line_start: int
    """The section asked about (the whole document: its first and last line)."""
    line_end: int
    breadcrumb: str
    hits: list[RelatedHit]
    semantic: str
    """`ready` when the stored vectors took part, else why not (`off: ...`, `not embedded`)."""
    took_ms: float


@_WIRE
class StagesRecord(TypedDict):
    """Which stages were asked for, which ran, and why the others did not."""

    requested: list[StageName]
    performed: list[StageName]
    skipped: dict[str, str]
    engines: dict[str, str]
    """The store each retrieval stage that ran searched: `tantivy` or `qdrant-sparse:WHERE`
    (lexical), `usearch` or `qdrant:WHERE` (semantic); WHERE is `local` (a folder), `memory` or
    `server`."""


@_WIRE
class FusionRecord(TypedDict):
    method: str
    """`learned` (the default: each hit's calibrated probability of answering, from the
    shipped ranking model), `convex` (scaled scores, fixed shares), `confidence` (weighted RRF)
    or the spec's plain `rrf`; under a fixed fusion one stage alone is `rrf` with weight 1."""
    k: int
    """RRF's k; 0 for `convex` and `learned`."""
    weights: dict[str, float]
    """Each retrieval stage's weight in this answer."""
    intent: Intent
    """What the query looks like: number, identifier, path, phrase and prefix queries are
    answered lexical-first (semantic hits only below), question and words ones by both."""
    model: NotRequired[str]  # `learned`: the ranking model's version


@_WIRE
class RankRecord(TypedDict):
    """The rerank stage in this answer: ran (`ready`), `skipped`, `failed` or `off`, and why."""

    state: RankStateName
    model: str
    error: str
    window: NotRequired[int]
    """How many fused hits the ranker read."""


@_WIRE
class Coverage(TypedDict):
    embedded: int
    total: int


@_WIRE
class FilterRecord(TypedDict):
    """The filter an answer applied, as values (a trailing `*` is a prefix)."""

    include: NotRequired[dict[str, list[str]]]
    exclude: NotRequired[dict[str, list[str]]]
    paths: NotRequired[list[str]]


@_WIRE
class Answer(TypedDict):
    """`search.query`'s answer."""

    workspace: str
    root: str
    query: str
    hits: list[Hit]
    mode_used: ModeUsed
    semantic: SemanticStateName
    semantic_coverage: Coverage | None
    model: str
    """The embedding model that answered, or `""`."""
    rank: RankRecord
    stages: StagesRecord
    fusion: FusionRecord | None
    filter: FilterRecord
    matched: NotRequired[int]
    """A filters-only query: how many documents match."""
    truncated: bool
    """A stage could not read deep enough to fill the answer."""
    below_floor: int
    """`learned`: candidates left out as implausible (probability under the model's floor)."""
    stale: list[str]
    """Paths changed on disk since indexing: left out of this answer, re-indexed now."""
    missing: list[str]
    """The query's content words that occur in no chunk of the workspace and are rare in the
    language (a common word a vault never uses is no news)."""
    confidence: ConfidenceLevel
    """`none` says the workspace has no answer, `low` that the hits may not be one. Under
    `learned` fusion from the top hit's calibrated probability; otherwise from `missing` and
    `cosine`."""
    cosine: float | None
    """The semantic stage's best cosine (absolute; null when it did not run)."""
    epoch: list[int]
    """The index's generation the answer was read at ([lexical, vector]): every hit comes from
    that one snapshot, and a later answer never has a lower one."""
    took_ms: float
    timings: dict[str, float]
    did_you_mean: NotRequired[str]
    """The query, a word found nowhere replaced by one an edit or two away (also searched)."""


# -- search.find, doc.read, changes.since -------------------------------------------------------


@_WIRE
class FindMatch(TypedDict):
    name: str
    """The name as written in the document."""
    match: Literal["exact", "prefix", "partial"]
    kind: Literal["title", "alias", "heading", "identifier"]
    path: str
    title: str
    line: int
    """1-based line of the name."""
    line_start: NotRequired[int]
    """The section holding the name."""
    line_end: NotRequired[int]
    breadcrumb: NotRequired[str]


@_WIRE
class FindAnswer(TypedDict):
    """`search.find`'s answer."""

    name: str
    exact: bool
    matches: list[FindMatch]
    truncated: bool
    """The name was too short to list every candidate."""
    workspace: str
    took_ms: float


@_WIRE
class Span(TypedDict):
    """`doc.read`'s answer: exactly the lines asked for, up to 400 lines or 64 KB a call."""

    workspace: str
    path: str
    line_start: int
    line_end: int
    lines_total: int
    text: str
    generation: int | None
    """The indexed generation of the file, or null when it is not indexed."""
    truncated: NotRequired[bool]
    """Set (true) when the span asked for was longer than one read returns (400 lines or
    64 KB of text): `line_end` is the last line returned."""
    next_line: NotRequired[int]
    """With `truncated`: the line to ask for next."""


@_WIRE
class DocsIndexed(TypedDict):
    """`doc.indexed`'s answer: which of the paths asked about the index holds as documents
    (each path once, in the order asked)."""

    workspace: str
    indexed: list[str]
    absent: list[str]


@_WIRE
class Change(TypedDict):
    seq: int
    time: float
    path: str
    op: str
    generation: int | None


@_WIRE
class Changes(TypedDict):
    """`changes.since`'s answer."""

    workspace: str
    changes: list[Change]
    cursor: int
    """Pass it back to get the changes after these."""
    more: bool
    reset: bool
    """The cursor is older than the log keeps: resync in full."""


# -- workspaces and state ------------------------------------------------------------------------


@_WIRE
class Meter(TypedDict):
    calls: int
    texts: int
    tokens: int
    ms: float
    errors: int


@_WIRE
class RankerState(TypedDict):
    """A workspace's reranker: `ready` with its model, or `off` and why."""

    state: Literal["ready", "off"]
    model: str
    error: str
    window: NotRequired[int]
    meter: NotRequired[Meter]
    api_key: NotRequired[Literal["set", "unset"]]


@_WIRE
class StageState(TypedDict):
    """What a picker shows beside its stage toggles (`autodoc/stateChanged` carries it too)."""

    workspace: str
    semantic: SemanticStateName
    semantic_reason: str
    semantic_coverage: Coverage | None
    model: str
    rank: RankerState


@_WIRE
class WorkspaceInfo(TypedDict):
    """A `workspace.list` entry."""

    name: str
    root: str
    documents: int
    chunks: int
    indexed_at: float | None
    options: dict[str, Any]


@_WIRE
class WorkspaceAdded(WorkspaceInfo):
    """`workspace.add`'s answer."""

    created: bool
    """False when the same name and root were added before."""


@_WIRE
class SchemaState(TypedDict):
    """The frontmatter schema in force (`workspace.configure` with `schema`, `check`)."""

    path: str
    """As the option gives it: relative to the root, or absolute."""
    fields: list[str]
    """Declared fields: each a facet filters can use."""
    types: list[str]
    error: str
    """Why the file did not load ("" when it did); the previous schema stays in force."""


@_WIRE
class SchemaLoaded(SchemaState):
    """`workspace.configure`'s `schema`: loaded before the answer, so filters on the new
    fields work at once."""

    facets_rebuilt: int
    """Documents whose facets were rebuilt from their stored frontmatter (0: unchanged)."""


@_WIRE
class LinkCounts(TypedDict):
    total: int
    resolved: int


@_WIRE
class Problem(TypedDict):
    """A file that could not be indexed (or read), and why: reported, skipped, nothing lost."""

    path: str
    kind: str
    message: str


@_WIRE
class LexicalInfo(TypedDict):
    engine: str
    entries: int


@_WIRE
class EmbeddingInfo(TypedDict):
    model: str
    model_fp: str
    dim: int
    meter: Meter
    api_key: NotRequired[Literal["set", "unset"]]


@_WIRE
class IndexStatus(WorkspaceInfo):
    """`index.status`'s answer: one workspace's index, its problems and its stages' state."""

    db: str
    writer: bool
    links: LinkCounts
    problems: list[Problem]
    """The first 200, by path."""
    problem_count: int
    lexical: LexicalInfo
    semantic: SemanticStateName
    semantic_reason: str
    rank: RankerState
    semantic_coverage: NotRequired[Coverage | None]
    embedding: NotRequired[EmbeddingInfo]


@_WIRE
class ServerInfo(TypedDict):
    version: str
    pid: int
    db: str
    writer: bool
    lease: LeaseState
    """`writer` (this process writes the store), `read-only` (another holds the lease: `holder`)
    or `taking over` (the holder is gone; this process takes the lease within seconds)."""
    holder: str
    """Who holds the writer lease when this process does not: `pid N on HOST`."""
    pending: int
    """Edits waiting to be re-indexed."""
    watching: bool
    question_log: str | None
    """Where this server logs the questions it answers (`--log-questions`), or null: off."""


@_WIRE
class WorkspaceState(TypedDict):
    """One workspace of the store as a server sees it: whether it keeps it fresh, its size,
    and what its stages can do."""

    name: str
    root: str
    served: bool
    """This server keeps it fresh (the others are in the store, indexed by another)."""
    indexing: str
    """`indexing`, `ready`, `read-only: ...`, `error: ...`, or `not refreshed by this server`."""
    documents: int
    chunks: int
    indexed_at: float | None
    semantic: SemanticStateName
    semantic_reason: str
    semantic_coverage: Coverage | None
    model: str
    rank: RankerState
    rules: NotRequired[FileRules]
    """What leaves files out of it, as this server's last walk of it found (served only)."""


@_WIRE
class IndexProgress(TypedDict):
    """`autodoc/indexProgress`: how far a served folder's indexing has got, at most four times
    a second, so a picker can say so while lexical hits already come from what is stored."""

    workspace: str
    root: str
    phase: Literal["files", "embedding"]
    done: int
    """Files read, or chunks embedded in this pass."""
    total: int
    """Files found, or chunks this pass embeds."""
    chunks: int
    """Live chunks in the store now: what lexical search can already find."""


@_WIRE
class Status(TypedDict):
    """The one status of a long-lived server: the LSP `autodoc.status` command, the MCP `status`
    tool and the `autodoc/indexReady` notification all carry it. Served workspaces come first.
    `index.status` adds one workspace's problems, links and models."""

    server: ServerInfo
    workspaces: list[WorkspaceState]
    refused: list[str]
    """Folders that could not become workspaces, and why."""


@_WIRE
class ErrorObject(TypedDict):
    """A JSON-RPC error: `code` is one of errors.py's, never reused for another meaning."""

    code: int
    message: str
    data: NotRequired[Any]


# Every wire object, in the order types.lua lists them (the `links.*` answers: link_answers.py).
WIRE_TYPES: tuple[type, ...] = (
    HeadingAt, Hit, RelatedHit, RelatedAnswer, StagesRecord, FusionRecord, RankRecord, Coverage,
    FilterRecord, Answer, FindMatch, FindAnswer, Span, DocsIndexed, Change, Changes, Meter,
    RankerState, StageState, WorkspaceInfo, WorkspaceAdded, LinkCounts, Problem, LexicalInfo,
    EmbeddingInfo, IndexStatus, ServerInfo, WorkspaceState, IndexProgress, Status, *LINK_TYPES,
    *ACTION_TYPES, *FILE_RULE_TYPES,
    *RENAME_TYPES, *GAP_TYPES,
    ErrorObject,
)  # fmt: skip

_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def conform(value: Any, wire_type: type) -> None:
    """Raise pydantic's ValidationError unless `value` is exactly this wire type: every
    required key, no other, each of its type."""
    from pydantic import TypeAdapter  # only where a value is validated

    adapter = _ADAPTERS.get(wire_type)
    if adapter is None:
        adapter = _ADAPTERS[wire_type] = TypeAdapter(wire_type)
    adapter.validate_python(value)
