"""Name lookup: titles, aliases, headings and code identifiers, found by name (`search.find`).

Agents and people often know a name, not words about it: `placeOrderRequest`, `strcpy_s`,
`CWnd`. Ranking by BM25 or cosine is the wrong tool for that; a dictionary is the right one.

Every name is cut into subwords (camelCase, PascalCase, snake_case, `::`, spaces and
punctuation), lowercased, and stored under each *suffix join*: the subwords from position i to
the end, concatenated. `placeOrderRequest` is stored as `placeorderrequest` (position 0),
`orderrequest` and `request`. A query is normalised the same way and answered by one key range
of a B-tree: the key equals a whole name (exact), begins one (prefix), or begins a later join
(the rest): `orderRequest` and `order` find `placeOrderRequest`; `place order` begins it;
`WebAuth` begins the join `webauthnsession` of `GetWebAuthnSession`. A subword never matches
from its middle: `rder` finds nothing.

Storage (one set per workspace, written in the transaction that publishes a document):
`symbols` (id, name), `symbol_keys` (key, position, symbol) and `symbol_sites` (symbol,
document, kind, label, line) with one site per name and document, at its strongest kind;
`label` is the length of the title or heading a name came from: `CWnd` in "CWnd Class" is
more the subject of its page than in "Detaching a CWnd from Its HWND".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

from autodoc import store as queries
from autodoc.parse.document import ParsedDocument
from autodoc.wire import protocol
from autodoc.wire.errors import invalid_params

# Kinds of site, strongest first: what a name is to the document it occurs in.
KIND_TITLE, KIND_ALIAS, KIND_HEADING, KIND_CODE = 0, 1, 2, 3
KIND_NAMES: tuple[Literal["title", "alias", "heading", "identifier"], ...] = (
    "title",
    "alias",
    "heading",
    "identifier",
)
MATCH_NAMES: tuple[Literal["exact", "prefix", "partial"], ...] = ("exact", "prefix", "partial")

MAX_NAME_CHARS = 200  # longer "names" are sentences, not names
MAX_KEYS = 12  # suffix joins stored per name: headings of many words stay cheap
CANDIDATES = 5000  # key rows read per lookup; past this the answer says `truncated`
DEFAULT_LIMIT = 20
MAX_LIMIT = 500
INDEX_FORMAT = "names=2"  # bump when extraction changes: documents are re-read once

_PIECE = re.compile(r"[^\W_]+")  # letters and digits, any script
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# A fenced block's own fence lines: its info string (```python) names a language, not code.
_FENCE_LINE = re.compile(r"^[ \t>]*(?:`{3,}|~{3,}).*$", re.M)  # in items and quotes too
_LINK_TARGET = re.compile(r"\]\([^)\n]*\)|<[a-z][a-z0-9+.-]*:[^>\n]*>", re.I)
_BARE_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+", re.I)
# Prose tokens that may look like code: qualified, leading underscore, or with an upper-case
# letter, digit or underscore after the first letter; `identifier_shaped` decides.
_PROSE_CANDIDATE = re.compile(
    r"(?<![\w:])(?:_\w*+|[A-Za-z][a-z]*+[A-Z0-9_]\w*+|[A-Za-z]\w*+(?=::[A-Za-z_]))"
    r"(?:::[A-Za-z_]\w*+)*+",
    re.ASCII,
)
_LIST_SEP = re.compile(r"\s*[,;]\s*")

# Words every language spells the same: as identifiers they would only crowd the dictionary.
KEYWORDS = frozenset(
    """
    and as async auto await begin bool break byte case catch char class const continue def
    default define delete do double echo elif else end endif enum esac except export extends
    extern false fi final finally float fn for from func function goto if ifdef ifndef impl
    implements import in include inline int interface is lambda let long mod namespace new
    none not null nullptr object of or override package pass pragma private protected pub
    public raise register return self select set short signed sizeof static string struct
    super switch template then this throw throws true try type typedef typename undef union
    unsigned use using var virtual void volatile where while with yield
    """.split()  # noqa: SIM905 (a word list reads better than 113 quoted strings)
)


def subwords(text: str) -> list[str]:
    """Lowercased subwords: `GetWebAuthnSession` → get, web, authn, session; `strcpy_s` →
    strcpy, s; `CWnd::Create` → c, wnd, create."""
    if text.isascii():  # the humps never span a separator: one pass over the whole name
        return [w.lower() for w in _CAMEL.findall(text)]
    out: list[str] = []
    for piece in _PIECE.findall(text):
        if piece.isascii():
            out.extend(w.lower() for w in _CAMEL.findall(piece))
        else:
            out.append(piece.casefold())
    return out


def suffix_keys(name: str) -> list[tuple[int, str]]:
    """(position, key) for each suffix join of the name's subwords."""
    words = subwords(name)
    return [(i, "".join(words[i:])) for i in range(min(len(words), MAX_KEYS))]


def query_key(name: str) -> str:
    return "".join(subwords(name))


def identifier_shaped(token: str) -> bool:
    """Looks like code even in prose: `snake_case`, `camelCase`, `CWnd`, `Win32`, `a::b`."""
    return _SHAPED.fullmatch(token) is not None


# An identifier that looks like code even in prose: an underscore, `::`, a camel hump, an
# upper-case run before lower case (CWnd, HTTPServer; not URLs, APIs), or a letter and a digit.
_SHAPED = re.compile(
    r"(?<![\w:])(?=(?:\w|::(?=[A-Za-z_]))*?(?:_|::[A-Za-z_]|[a-z][A-Z]|[A-Z]{2}[a-z]{2}|"
    r"[A-Za-z][0-9]))[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*(?![\w:])",
    re.ASCII,
)


def _code_name(token: str) -> bool:
    return len(token) >= 2 and token.strip("_") != "" and token.lower() not in KEYWORDS


def _runs(doc: ParsedDocument) -> Iterable[tuple[bool, int, str]]:
    """Runs of fenced-code lines and of other lines: (is code, first line index, text)."""
    lines, code = doc.lines, doc.code
    i, n = doc.body_line, len(lines)
    while i < n:
        is_code = code[i]
        j = code.find(b"\x00" if is_code else b"\x01", i)
        j = n if j < 0 or j > n else j
        yield bool(is_code), i, "\n".join(lines[i:j])
        i = j


def _offset_of(text: str, token: str) -> int:
    """Where the token first occurs as a whole word in the text; else where it first occurs
    at all (`Create` seen only inside `CWnd::Create`)."""
    at = first = text.find(token)
    while at >= 0:
        end = at + len(token)
        before = text[at - 1] if at else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before in "_:") and not (after.isalnum() or after in "_:"):
            return at
        at = text.find(token, at + 1)
    return max(first, 0)


def _blank(m: re.Match) -> str:
    return " " * len(m.group(0))  # keeps offsets, so lines can be found in the blanked text


# Over 60 lines: one pass over a document's lines collecting every source of a name in
# priority order (title, aliases, headings, code); mutation-tested as a whole.
def document_symbols(doc: ParsedDocument) -> dict[str, tuple[int, int, int]]:
    """name → (kind, label length, 1-based line): one site per name, the strongest.

    Identifiers: every one in fenced and inline code (less keywords), and those shaped like
    code in prose. Work is per run of lines and per distinct token, not per occurrence."""
    sites: dict[str, tuple[int, int, int]] = {}
    code_words: set[str] = set()
    rejected: set[str] = set()  # keywords and such: checked once per document, not per run
    for is_code, first, text in _runs(doc):
        found: list[tuple[str, str]] = []  # (token, the text to find its line in)
        if is_code:
            if "``" in text or "~~" in text:
                text = _FENCE_LINE.sub(_blank, text)
            tokens = dict.fromkeys(_IDENT.findall(text))
            code_words.update(tokens)
            found = [(t, text) for t in tokens if t not in sites and t not in rejected]
        else:
            prose = text  # inline code stays: its tokens are names already, so skipped
            if "`" in text:
                spans = " ".join(m[1] for m in _INLINE_CODE.findall(text))
                inline = dict.fromkeys(_IDENT.findall(spans))
                code_words.update(inline)
                found = [(t, text) for t in inline if t not in sites and t not in rejected]
            if "](" in prose or "<" in prose:
                prose = _LINK_TARGET.sub(_blank, prose)
            if "://" in prose:
                prose = _BARE_URL.sub(_blank, prose)
            found += [
                (t, prose)
                for t in dict.fromkeys(_PROSE_CANDIDATE.findall(prose))
                if t not in sites and t not in rejected and identifier_shaped(t)
            ]
        for tok, where in found:
            if tok in sites:
                continue  # runs come in order: the first site of a code name stands
            names = (tok, *tok.split("::")) if "::" in tok else (tok,)
            for name in names:
                if name in sites or name in rejected:
                    continue
                if _code_name(name):
                    at = _offset_of(where, name)
                    sites[name] = (KIND_CODE, 0, first + 1 + where.count("\n", 0, at))
                else:
                    rejected.add(name)

    def add(name: str, kind: int, label: int, line: int) -> None:
        name = name.strip()
        if not name or len(name) > MAX_NAME_CHARS or not _PIECE.search(name):
            return
        old = sites.get(name)
        if old is None or (kind, label, line) < old:
            sites[name] = (kind, label, line)

    def add_label(text: str, kind: int, line: int) -> None:
        """A title, alias or heading: the whole text, each item of a list (`a, b, c`), and
        the identifiers in it (shaped like code, or used as code in this document)."""
        label = len(text.strip())
        add(text, kind, label, line)
        if "," in text or ";" in text:
            for part in _LIST_SEP.split(text.strip()):
                add(part, kind, label, line)
        for tok in _IDENT.findall(text):
            for name in (tok, *tok.split("::")) if "::" in tok else (tok,):
                if _code_name(name) and (identifier_shaped(name) or name in code_words):
                    add(name, kind, label, line)

    title_line = next((h.line + 1 for h in doc.headings if h.level == 1 and h.text == doc.title), 1)
    add_label(doc.title, KIND_TITLE, title_line)
    for alias in doc.aliases:
        add_label(alias, KIND_ALIAS, 1)
    for h in doc.headings:
        if h.text:
            add_label(h.text, KIND_HEADING, h.line + 1)
    return sites


# -- writing --------------------------------------------------------------------------------


def _detach(conn, doc_ids: list[int]) -> set[int]:
    """Delete these documents' sites; the names they used, to check for orphans after."""
    return queries.detach_names(conn, doc_ids)


def _drop_orphans(conn, ws_id: int, symbol_ids: set[int]) -> None:
    """Names no document uses any more leave the dictionary (their keys by primary key)."""
    orphans = queries.orphan_names(conn, sorted(symbol_ids))
    queries.drop_names(conn, ws_id, [(sid, suffix_keys(name)) for sid, name in orphans])


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
    known = queries.name_ids(conn, ws_id, names)
    fresh = [n for n in names if n not in known]
    added = queries.add_names(conn, ws_id, fresh)
    known.update(added)
    key_rows = [
        (ws_id, key, pos, sid) for name, sid in added.items() for pos, key in suffix_keys(name)
    ]
    key_rows.sort()  # in key order: B-tree pages fill in sequence
    queries.add_name_keys(conn, key_rows)
    queries.add_name_sites(
        conn,
        sorted(
            (known[name], doc_id, kind, label, line)
            for doc_id, sites in docs
            for name, (kind, label, line) in sites.items()
        ),
    )
    _drop_orphans(conn, ws_id, used - {known[n] for n in names})


# -- reading --------------------------------------------------------------------------------


def parse_options(opts: Any) -> tuple[bool, int]:
    if opts is None:
        opts = {}
    if not isinstance(opts, dict):
        raise invalid_params("options must be an object: {exact, limit}", field="opts")
    unknown = sorted(set(opts) - {"exact", "limit"})
    if unknown:
        raise invalid_params(
            f"unknown option {unknown[0]!r} (known: exact, limit)", field=unknown[0]
        )
    exact = opts.get("exact", False)
    if not isinstance(exact, bool):
        raise invalid_params("exact must be true or false", field="exact")
    limit = opts.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise invalid_params(f"limit must be an integer from 1 to {MAX_LIMIT}", field="limit")
    return exact, limit


def find(conn, ws_id: int, name: Any, *, exact: bool, limit: int):
    """Names that match and the documents holding them, a row per name and document: exact →
    prefix → partial, then title → alias → heading → identifier, shorter names first, then
    names from shorter titles and headings.
    Returns (rows, truncated); a row is (tier, kind, name, document_id, line)."""
    if not isinstance(name, str) or not name.strip():
        raise invalid_params("name must be a non-empty string", field="name")
    key = query_key(name)
    if not key:
        raise invalid_params("name has no letters or digits to look up", field="name")
    return queries.find_names(conn, ws_id, key, exact=exact, limit=limit, cap=CANDIDATES)


def answer(
    conn, ws_id: int, name: Any, opts: Any = None
) -> tuple[list[protocol.FindMatch], bool, bool]:
    """`search.find`'s (matches, exact, truncated): each match with its document and the
    section around it."""
    exact, limit = parse_options(opts)
    rows, truncated = find(conn, ws_id, name, exact=exact, limit=limit)
    matches = []
    for tier, kind, matched, doc_id, line in rows:
        path, title = queries.document_title(conn, doc_id)
        section = queries.section_at(conn, doc_id, line)
        match = protocol.FindMatch(
            name=matched,
            match=MATCH_NAMES[tier],
            kind=KIND_NAMES[kind],
            path=path,
            title=title,
            line=line,
        )
        if section is not None:
            _, match["line_start"], match["line_end"], match["breadcrumb"] = section
        matches.append(match)
    return matches, exact, truncated
