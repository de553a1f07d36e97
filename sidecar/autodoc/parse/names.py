"""Names: what a document, a heading or a code span is called, and how a name is looked up.

A link's target is a *key* (`link_key`: a root-relative path without `.md`, lower-cased; a
record number's `folder/#32`); a title may list or gloss several names (`title_names`).
`search.find` looks names up by their subwords: every name (titles, aliases, headings, code
identifiers; `document_symbols` collects them from a parsed document) is cut into subwords
(camelCase, PascalCase, snake_case, `::`, spaces and punctuation), lowercased, and stored under
each *suffix join*: the subwords from position i to the end, concatenated. `placeOrderRequest` is
stored as `placeorderrequest` (position 0), `orderrequest` and `request`. A query is normalised
the same way (`query_key`) and answered by one key range of a B-tree: the key equals a whole name
(exact), begins one (prefix), or begins a later join (the rest): `orderRequest` and `order` find
`placeOrderRequest`; `place order` begins it; `WebAuth` begins the join `webauthnsession` of
`GetWebAuthnSession`. A subword never matches from its middle: `rder` finds nothing.

The index writes them (`index/name_index.py`), the query path reads them (`query/find.py`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from typing import Literal

from autodoc.parse.document import ParsedDocument

# Kinds of site, strongest first: what a name is to the document it occurs in.
KIND_TITLE, KIND_ALIAS, KIND_HEADING, KIND_CODE = 0, 1, 2, 3
KIND_NAMES: tuple[Literal["title", "alias", "heading", "identifier"], ...] = (
    "title",
    "alias",
    "heading",
    "identifier",
)

MAX_NAME_CHARS = 200  # longer "names" are sentences, not names
MAX_KEYS = 12  # suffix joins stored per name: headings of many words stay cheap
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


def link_key(
    source: str, kind: str, target: str, is_file: Callable[[str], bool] | None = None
) -> str:
    """The `names.key` a link looks up: a root-relative path for Markdown links.

    A frontmatter path is read relative to its file (`../adr/0042.md`, `0042.md`), except
    that one with a folder and no `./` or `../` (`adr/0042-use-postgres.md`, as vaults often
    write them) is read from the root when `is_file` (root-relative path) finds no file beside
    the source but one from the root."""
    t = target.strip()
    if kind == "record":
        return record_key(posixpath.dirname(source), t)
    if kind == "md" or (kind == "meta" and ("/" in t or without_md_suffix(t) != t)):
        base = "" if t.startswith("/") else posixpath.dirname(source)
        beside = posixpath.normpath(posixpath.join(base, t.lstrip("/")))
        from_root = posixpath.normpath(t)
        rootish = kind == "meta" and "/" in t and not t.startswith(("/", "./", "../"))
        if rootish and is_file is not None and from_root != beside:
            t = from_root if not is_file(beside) and is_file(from_root) else beside
        else:
            t = beside
    return without_md_suffix(t).lower()


def without_md_suffix(path: str) -> str:
    lower = path.lower()
    for suffix in (".markdown", ".md"):
        if lower.endswith(suffix):
            return path[: -len(suffix)]
    return path


def record_key(folder: str, number: str) -> str:
    """The `names.key` of a record number in a folder: `docs/adr/#32`."""
    return f"{folder.lower()}/#{number}"


# A title that names several things (`strcpy_s, wcscpy_s, _mbscpy_s`: one page for a family of
# functions) or one thing and what it is (`/Zc:__cplusplus (Enable updated __cplusplus macro)`):
# each name is the document's too, so the exact-name pass finds it for `strcpy_s`.
_LISTED = re.compile(r"^[^\s,]+(?:\s*,\s*[^\s,]+)+$")
_GLOSSED = re.compile(r"^(.*?\S)\s*\([^()]*\)$")


def title_names(title: str) -> list[str]:
    """The names a title lists (`a, b, c`: each a single word) or glosses (`/EH (…)`: `/eh`),
    lower-cased; none for a title that is one name or a sentence."""
    t = " ".join(title.split()).lower()
    glossed = _GLOSSED.match(t)
    if glossed:
        t = glossed[1]
    if _LISTED.match(t):
        return [n.strip() for n in t.split(",") if n.strip()]
    return [t] if glossed else []
