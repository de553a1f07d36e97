"""Sections and chunks of real corpora under two versions of AutoDoc: what changed, and why.

Reads every Markdown file of each corpus with the working tree's `document` and `chunking`
modules and with those of another revision (checked out into a temporary git worktree, run in
a child process), then compares them file by file:

- sections (the headings a document is cut at): counts, and every file whose headings differ
  in place or level, each difference classified by what the new parser sees at that line;
- heading text that changed at the same place (code spans, link text, emphasis);
- chunks: how many keep their text hash (same id and vector on re-index), how many a
  re-index writes, and how many distinct texts it would embed.

    python bench/structure_diff.py --before REV [--corpus adr dendron-site cpp-docs]
        [--files OUT.tsv] [--examples 3]
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
from pathlib import Path

from index_time import REPO, checkout

SHARED = REPO.parent / "shared" / "corpora"


def dump(src: Path, corpus: Path) -> None:
    """Child mode: one JSON line a file with its sections and chunks, read by `src`'s code."""
    sys.path.insert(0, str(src / "sidecar"))
    from autodoc.parse.chunking import Chunker, find_sections
    from autodoc.parse.document import parse_document

    chunker = Chunker()
    for path in sorted(corpus.rglob("*.md")):
        rel = path.relative_to(corpus).as_posix()
        if any(part.startswith(".") for part in Path(rel).parts):
            continue
        doc = parse_document(path.read_bytes(), rel)
        sections = [(s.level, s.heading, s.start) for s in find_sections(doc) if s.level]
        chunks = [(c.kind, c.text_hash, c.line_start, c.line_end) for c in chunker.chunk(doc)]
        data = doc.data
        count = data.count(b"\n") + (bool(data) and not data.endswith(b"\n"))
        row = {"path": rel, "sections": sections, "chunks": chunks, "lines": count}
        print(json.dumps(row, ensure_ascii=False))


def read(src: Path, corpus: Path) -> dict[str, dict]:
    out = subprocess.run(
        [sys.executable, __file__, "--dump", str(src), str(corpus)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {r["path"]: r for r in map(json.loads, out.splitlines())}


def why(doc, line: int, added: bool) -> str:
    """What the CommonMark parser sees at a line where the two versions disagree."""
    text = doc.lines[line] if line < len(doc.lines) else ""
    if added:
        heading = next(h for h in doc.headings if h.line == line)
        if not text.lstrip().startswith("#") and heading.end - heading.line > 1:
            return "setext heading found"
        return "ATX heading found"
    if doc.code[line]:
        return "inside a code block"
    if doc.html[line]:
        return "inside an HTML block"
    nested = [b for b in doc.blocks if b.depth and b.start <= line < b.end]
    if any(b.kind in ("Item", "BlockQuote", "FootnoteDefinition") for b in nested):
        return "inside a list item or block quote"
    if text.lstrip().startswith("#"):
        return "not a heading (e.g. `#word`, a `#` line in a paragraph)"
    return "not a heading"


def compare(name: str, before: dict[str, dict], after: dict[str, dict], args) -> list[str]:
    sys.path.insert(0, str(REPO / "sidecar"))
    from autodoc.parse.document import parse_document

    root = SHARED / name
    reasons: collections.Counter[str] = collections.Counter()
    text_changes: list[tuple[str, str, str]] = []
    changed_files: list[str] = []
    rows: list[str] = []
    kept = written = 0
    old_hashes = {h for r in before.values() for _, h, _, _ in r["chunks"]}
    new_texts: set[str] = set()
    past_end = {"before": 0, "after": 0}
    for path in sorted(after):
        old, new = before.get(path), after[path]
        if old is None:
            continue
        for label, r in (("before", old), ("after", new)):
            past_end[label] += any(c[3] > max(r["lines"], 1) for c in r["chunks"])
        old_places = {(lv, ln) for lv, _, ln in old["sections"]}
        new_places = {(lv, ln) for lv, _, ln in new["sections"]}
        old_text = {(lv, ln): t for lv, t, ln in old["sections"]}
        for lv, t, ln in new["sections"]:
            if (lv, ln) in old_text and old_text[(lv, ln)] != t:
                text_changes.append((path, old_text[(lv, ln)], t))
        if old_places != new_places:
            changed_files.append(path)
            file_reasons: collections.Counter[str] = collections.Counter()
            doc = parse_document((root / path).read_bytes(), path)
            old_lines = {ln for _, ln in old_places}
            new_lines = {ln for _, ln in new_places}
            for _, ln in old_places - new_places:
                file_reasons["level changed" if ln in new_lines else why(doc, ln, False)] += 1
            for _, ln in new_places - old_places:
                if ln not in old_lines:
                    file_reasons[why(doc, ln, True)] += 1
            reasons.update(file_reasons)
            rows.append(
                f"{name}\t{path}\t{len(old_places)}\t{len(new_places)}\t"
                + "; ".join(f"{k}: {v}" for k, v in sorted(file_reasons.items()))
            )
        old_keys = collections.Counter((k, h) for k, h, _, _ in old["chunks"])
        for k, h, _, _ in new["chunks"]:
            if old_keys[(k, h)] > 0:
                old_keys[(k, h)] -= 1
                kept += 1
            else:
                written += 1
                if h not in old_hashes:
                    new_texts.add(h)
    n_before = sum(len(r["sections"]) for r in before.values())
    n_after = sum(len(r["sections"]) for r in after.values())
    c_before = sum(len(r["chunks"]) for r in before.values())
    c_after = sum(len(r["chunks"]) for r in after.values())
    out = [
        f"### {name} ({len(after)} files)\n",
        "| | before | after |",
        "|---|---:|---:|",
        f"| sections (headings cut at) | {n_before:,} | {n_after:,} |",
        f"| chunks | {c_before:,} | {c_after:,} |",
        f"| files with a chunk past the last line | {past_end['before']} | {past_end['after']} |",
        "",
        f"Files whose sectioning changed: **{len(changed_files)}**. Heading text changed in "
        f"place: {len(text_changes)}. Re-index: {kept:,} chunks kept (same text, same id and "
        f"vector), {written:,} written, {len(new_texts):,} distinct new texts to embed.\n",
        "| headings | count |",
        "|---|---:|",
        *(f"| {k} | {v} |" for k, v in reasons.most_common()),
        "",
    ]
    if text_changes:
        out.append("Heading text, examples:\n")
        for path, a, b in text_changes[: args.examples]:
            out.append(f"- `{path}`: {a!r} → {b!r}")
        out.append("")
    if changed_files:
        out.append("Changed files, examples:\n")
        out.extend(f"- {r.split(chr(9), 1)[1]}" for r in rows[: args.examples])
        out.append("")
    args.rows.extend(rows)
    return out


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--dump":
        dump(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="git revision to compare against")
    ap.add_argument("--corpus", nargs="+", default=["adr", "dendron-site", "cpp-docs"])
    ap.add_argument("--files", help="write every changed file here (TSV)")
    ap.add_argument("--examples", type=int, default=3)
    args = ap.parse_args()
    args.rows = []
    with checkout(args.before) as old_src:
        report = [f"## Sectioning: {args.before} → working tree\n"]
        for name in args.corpus:
            corpus = SHARED / name
            report += compare(name, read(old_src, corpus), read(REPO, corpus), args)
    print("\n".join(report))
    if args.files:
        header = "corpus\tpath\tsections before\tsections after\twhy\n"
        Path(args.files).write_text(header + "\n".join(args.rows) + "\n")


if __name__ == "__main__":
    main()
