"""The edits a rename makes in one document: every link in it to the renamed note (its prose
and its front matter), rewritten in its own form and checked to lead to the note afterwards;
in the note itself, the links to its own headings (`[[#Heading]]`, `(#heading)`) and, when it
moves to another folder, its relative Markdown links to other notes.

A document is read as the indexer reads it (`parse_document`: code blocks, raw HTML and code
spans hold no links), so the links found here are the ones the index counted.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote

from autodoc.links.dialect import Dialect
from autodoc.links.link_style import md_destination
from autodoc.links.navigate import anchor_key, slug
from autodoc.links.rename_plan import (
    NoteNames,
    Resolver,
    Written,
    frontmatter_scalars,
    heading_text,
    local_anchors,
    meta_target,
    relative_path,
    wiki_target,
    written_links,
)
from autodoc.parse.document import (
    MD_LINK,
    SUPERSEDE_FIELDS,
    WIKILINK,
    ParsedDocument,
    links_on_line,
    parse_document,
    wiki_parts,
)
from autodoc.parse.names import without_md_suffix

IsFile = Callable[[str], bool]


@dataclass(frozen=True)
class Change:
    """A rename: the note (its id), its names before and after, and the heading renamed
    (the words links name it by, before and after) if any."""

    doc_id: int
    before: NoteNames
    after: NoteNames
    heading: tuple[str, str] | None = None

    @property
    def moves(self) -> bool:
        return self.before.path != self.after.path


@dataclass(frozen=True)
class Edit:
    line: int  # 0-based
    start: int  # string offsets on the line
    end: int
    text: str


@dataclass
class SourcePlan:
    """One document's edits and what they did."""

    path: str
    lines: list[str]
    edits: list[Edit] = field(default_factory=list)
    rewritten: int = 0  # links to the note, rewritten
    kept: int = 0  # links to the note that lead to it as written (by title, by alias)
    local: int = 0  # links to the note's own headings, from inside it
    outgoing: int = 0  # the moved note's relative links to others
    broken: list[tuple[int, str]] = field(default_factory=list)  # (1-based line, why)


@dataclass(frozen=True)
class Context:
    """What every document's plan reads: the change, the resolver over the store's names,
    which frontmatter fields hold links, whether a path is a file before and after, and the
    paths of the notes the moved one links to."""

    change: Change
    resolver: Resolver
    note_keys: frozenset[str]  # the keys the note answers to now: only links by them lead to it
    link_fields: tuple[str, ...]
    is_file_before: IsFile
    is_file_after: IsFile
    paths_of: Callable[[list[int]], dict[int, str]]
    dialect: Dialect = field(default_factory=Dialect)  # how the vault's links read


def plan_document(path: str, data: bytes, ctx: Context) -> SourcePlan:
    """The edits `ctx.change` makes in the document `path` whose bytes are `data`."""
    doc = parse_document(data, path, ctx.link_fields, ctx.dialect.label_first)
    plan = SourcePlan(path, doc.lines)
    change = ctx.change
    after_path = change.after.path if path == change.before.path else path
    to_note: Counter[int] = Counter()  # links to the note by line (the front matter's: 0)
    for ln in doc.links:
        key, reach = ctx.dialect.key(path, ln.kind, ln.target, ctx.is_file_before)
        leads_here = key in ctx.note_keys and ln.kind != "record"
        if leads_here and ctx.resolver.before(key, reach) == change.doc_id:
            to_note[ln.line if ln.kind != "meta" else 0] += 1
    own = path == change.before.path
    outgoing = own and posixpath.dirname(after_path) != posixpath.dirname(path)
    lines = range(doc.body_line, len(doc.lines)) if own else sorted(n - 1 for n in to_note if n)
    for i in lines:
        line = doc.lines[i]
        if doc.code[i] or (i < len(doc.html) and doc.html[i]):
            continue
        if "[[" not in line and "](" not in line:
            continue
        found = _line_links(plan, i, path, after_path, ctx, outgoing=outgoing)
        if found != to_note.get(i + 1, 0):
            plan.broken.append((i + 1, "its links could not be placed on the line"))
        if own and change.heading is not None:
            _local_anchors(plan, i, change.heading, ctx.dialect.label_first)
    if to_note.get(0) or outgoing:
        _frontmatter(plan, doc, path, after_path, ctx, to_note.get(0, 0), outgoing=outgoing)
    return plan


def _before(ctx: Context, source: str, kind: str, target: str) -> int | None:
    return ctx.resolver.before(*ctx.dialect.key(source, kind, target, ctx.is_file_before))


def _after(ctx: Context, source: str, kind: str, target: str) -> int | None:
    return ctx.resolver.after(*ctx.dialect.key(source, kind, target, ctx.is_file_after))


def _line_links(plan: SourcePlan, i: int, path: str, after_path: str, ctx: Context,
                *, outgoing: bool) -> int:  # fmt: skip
    """Rewrite the links of line `i`; how many of them lead to the renamed note."""
    change, line = ctx.change, plan.lines[i]
    found = 0
    for w in written_links(line, ctx.dialect.label_first):
        key, reach = ctx.dialect.key(path, w.kind, w.target, ctx.is_file_before)
        if key not in ctx.note_keys and not (outgoing and w.kind == "md"):
            continue
        doc_id = ctx.resolver.before(key, reach)
        if doc_id == change.doc_id:
            found += 1
            _rewrite(plan, i, w, path, after_path, ctx)
        elif outgoing and doc_id is not None and w.kind == "md":
            _rewrite_outgoing(plan, i, w, doc_id, after_path, ctx)
    return found


def _rewrite(plan: SourcePlan, i: int, w: Written, path: str, after_path: str,
             ctx: Context) -> None:  # fmt: skip
    """One link to the renamed note: its target in its form, its heading if renamed."""
    change, line = ctx.change, plan.lines[i]
    edits = []
    written = line[w.target_span[0] : w.target_span[1]]
    if w.kind == "wiki":
        new = wiki_target(written, change.before, change.after, ctx.dialect)
    elif change.moves or after_path != path:
        new = md_destination(relative_path(change.after.path, after_path, w.target), w.bracketed)
    else:
        new = written
    if new != written:
        edits.append(Edit(i, *w.target_span, new))
    if change.heading is not None and w.heading_span is not None:
        anchor = line[w.heading_span[0] : w.heading_span[1]]
        words = heading_text(anchor, *change.heading, anchor=w.kind == "md")
        if words is not None and w.kind == "md" and md_destination(words, w.bracketed) != words:
            words = slug(change.heading[1])
        if words is not None and words != anchor:
            edits.append(Edit(i, *w.heading_span, words))
    problem = _check(line, w, edits, after_path, ctx, change.doc_id)
    if problem:
        plan.broken.append((i + 1, problem))
        return
    plan.edits += edits
    if edits:
        plan.rewritten += 1
    else:
        plan.kept += 1


def _rewrite_outgoing(plan: SourcePlan, i: int, w: Written, doc_id: int, after_path: str,
                      ctx: Context) -> None:  # fmt: skip
    """A relative link of the moved note to another note, from the note's new folder."""
    target = ctx.paths_of([doc_id]).get(doc_id)
    if target is None:
        return
    line = plan.lines[i]
    new = md_destination(relative_path(target, after_path, w.target), w.bracketed)
    edits = [Edit(i, *w.target_span, new)]
    if new == line[w.target_span[0] : w.target_span[1]]:
        return
    problem = _check(line, w, edits, after_path, ctx, doc_id)
    if problem:
        plan.broken.append((i + 1, problem))
        return
    plan.edits += edits
    plan.outgoing += 1


def _check(line: str, w: Written, edits: list[Edit], after_path: str, ctx: Context,
           want: int) -> str:  # fmt: skip
    """Why the link, edited, would not lead to `want` (and the renamed heading) after the
    rename, as the index will read it; "" when it would."""
    found = [
        ln
        for s, _e, ln in links_on_line(_apply(line, edits), ctx.dialect.label_first)
        if s == w.start
    ]
    if len(found) != 1 or found[0].kind != w.kind:
        return "the new name cannot be written in this link"
    link = found[0]
    doc_id = _after(ctx, after_path, link.kind, link.target)
    if doc_id != want:
        return f"{_shown(link.kind, link.target)} would lead to another note"
    heading = ctx.change.heading
    named = heading is not None and w.heading and anchor_key(w.heading) == anchor_key(heading[0])
    if named and heading is not None and anchor_key(link.heading) != anchor_key(heading[1]):
        return "the new heading cannot be written in this link"
    return ""


def _shown(kind: str, target: str) -> str:
    return f"[[{target}]]" if kind == "wiki" else f"({target})"


def _apply(line: str, edits: list[Edit]) -> str:
    for e in sorted(edits, key=lambda e: e.start, reverse=True):
        line = line[: e.start] + e.text + line[e.end :]
    return line


def _local_anchors(plan: SourcePlan, i: int, heading: tuple[str, str], label_first: bool) -> None:
    """The note's links to its own renamed heading: `[[#Old]]`, `[text](#old)`."""
    line = plan.lines[i]
    for kind, written, (start, end) in local_anchors(line, label_first):
        new = heading_text(written, *heading, anchor=kind == "md")
        if new is not None and kind == "md" and md_destination(new, False) != new:
            new = slug(heading[1])
        if new is not None and new != written:
            plan.edits.append(Edit(i, start, end, new))
            plan.local += 1


# Over 60 lines: each scalar of the front matter tried as a reference (a whole wiki or
# Markdown link in any field, a name or path in a field that holds links), in one pass.
def _frontmatter(plan: SourcePlan, doc: ParsedDocument, path: str, after_path: str,
                 ctx: Context, expected: int, *, outgoing: bool) -> None:  # fmt: skip
    """The frontmatter references to the renamed note, rewritten as written; in the note
    itself when it moves to another folder, its relative references to others too."""
    change = ctx.change
    wanted = Counter(ln.target for ln in doc.links if ln.kind == "meta")
    fields = set(SUPERSEDE_FIELDS) | set(ctx.link_fields)
    placed = 0
    for key, i, start, end in frontmatter_scalars(doc.lines, doc.body_line):
        value = doc.lines[i][start:end]
        span, target, bracketed = (start, end), value, None
        if m := WIKILINK.fullmatch(value):
            parts = wiki_parts(m[1], ctx.dialect.label_first)
            target = parts.text(parts.target)
            span = (start + m.start(1) + parts.target[0], start + m.start(1) + parts.target[1])
        elif (m := MD_LINK.fullmatch(value)) is not None:
            group = 1 if m.group(1) is not None else 2
            raw = m.group(group).split("#", 1)[0].split("?", 1)[0]
            target, bracketed = unquote(raw), group == 1
            span = (start + m.start(group), start + m.start(group) + len(raw))
        elif key not in fields:
            continue
        if wanted[target] <= 0:
            continue
        wanted[target] -= 1
        doc_id = _before(ctx, path, "meta", target)
        from_root = ctx.dialect.key(path, "meta", target, ctx.is_file_before)[0] == (
            without_md_suffix(posixpath.normpath(target)).lower()
        )
        if doc_id == change.doc_id:
            placed += 1
            new = meta_target(target, path, after_path, change.before, change.after, from_root,
                              ctx.dialect)  # fmt: skip
        elif outgoing and doc_id is not None and not from_root and _path_like(target):
            other = ctx.paths_of([doc_id]).get(doc_id)
            if other is None:
                continue
            new = relative_path(other, after_path, target)
        else:
            continue
        written = new if bracketed is None else md_destination(new, bracketed)
        if _after(ctx, after_path, "meta", new) != doc_id:
            plan.broken.append((i + 1, f"the frontmatter reference {new!r} would lead elsewhere"))
            continue
        if written == doc.lines[i][span[0] : span[1]]:
            plan.kept += doc_id == change.doc_id
        elif doc_id == change.doc_id:
            plan.edits.append(Edit(i, *span, written))
            plan.rewritten += 1
        else:
            plan.edits.append(Edit(i, *span, written))
            plan.outgoing += 1
    if placed < expected:
        plan.broken.append((1, "a frontmatter reference to the note could not be placed"))


def _path_like(target: str) -> bool:
    """A frontmatter reference read as a path (relative to its file), not a name."""
    return "/" in target or without_md_suffix(target) != target
