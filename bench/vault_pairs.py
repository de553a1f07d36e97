"""Training pairs a vault gives without labels (issue 55's experiment): each link's sentence →
the note, and the section, it points at.

A link is a reader's own statement that these words lead there: `see [the unwind
codes](directives-reference.md#x64-unwind-version-3-experimental)`, a table row naming an
option and what it does, `[[Pods|dendron.topic.pod]]`. The line holding the link, with the
link written as its words, is the query; the link's target document (and the heading it names,
its line) is the judged answer. The linking document holds the sentence verbatim, so its
candidates are left out of the pair (they would teach that a matching sentence does not
answer).

    python bench/vault_pairs.py --name adr --db /tmp/l2r/adr.db --workspace bench \\
        --work /tmp/l2r/cap-self [--limit 150] [--show 10]

writes `NAME-self.pkl`, a capture `train_ranking.py folds --self-work DIR` trains on and never
scores.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import re
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_ranking as tr

from autodoc.links.navigate import anchor_key
from autodoc.parse.document import links_on_line

_MARKUP = re.compile(r"[*`#>|\\]+")
_BULLET = re.compile(r"^\s*(?:[-+]|\d+[.)])\s+")
_MD_LABEL = re.compile(r"!?\[([^\]]*)\]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
MAX_WORDS = 24
# train_ranking's captures were pickled from its own __main__: their classes are found here
SetCapture, Captured = tr.SetCapture, tr.Captured


@dataclass
class Pair:
    query: str
    source: str  # the linking document: its candidates are dropped
    target: str
    line: int | None  # the heading the link names, else None (the document)

    @property
    def targets(self) -> list[tuple[str, int | None]]:
        return [(self.target, self.line)]

    kind = "self"
    negative = False

    @property
    def has_line(self) -> bool:
        return self.line is not None


def _words_of(line: str, label_first: bool) -> str:
    """The sentence holding the line's first link, each link written as its words."""
    out, last, at = [], 0, -1
    for start, end, link in links_on_line(line, label_first):
        out.append(line[last:start])
        at = sum(len(p) for p in out) if at < 0 else at
        label = _MD_LABEL.match(line, start)
        words = label[1] if label and link.kind == "md" else link.label
        out.append(words or link.target.rsplit("/", 1)[-1].rsplit(".", 1)[0].replace("-", " "))
        last = end
    out.append(line[last:])
    text, pos = "".join(out), 0
    sentence = text
    for part in _SENTENCE.split(text):
        if pos <= max(at, 0) <= pos + len(part):
            sentence = part
            break
        pos += len(part) + 1
    return " ".join(_MARKUP.sub(" ", _BULLET.sub("", sentence)).split()[:MAX_WORDS])


def pairs(db: Path, workspace: str) -> list[Pair]:
    """Every resolved link to another document of the workspace, as a pair (one a query)."""
    conn = sqlite3.connect(db)
    ws_id, root, dialect = conn.execute(
        "SELECT id, root, link_dialect FROM workspaces WHERE name = ?", (workspace,)
    ).fetchone()
    label_first = json.loads(dialect or "{}").get("name") == "dendron"
    rows = conn.execute(
        """SELECT s.path, t.path, t.headings, l.heading, l.line
           FROM links l JOIN documents s ON s.id = l.source_id
                JOIN documents t ON t.id = l.target_id
           WHERE l.workspace_id = ? AND l.kind IN ('md', 'wiki') AND l.target_id != l.source_id
             AND s.deleted = 0 AND t.deleted = 0""",
        (ws_id,),
    ).fetchall()
    lines: dict[str, list[str]] = {}
    out: dict[str, Pair] = {}
    for source, target, headings, heading, line in rows:
        if source not in lines:
            lines[source] = (Path(root) / source).read_text(encoding="utf-8").splitlines()
        text = lines[source][line - 1] if line <= len(lines[source]) else ""
        query = _words_of(text, label_first)
        if len(query.split()) < 3:
            continue
        at = None
        if heading:
            key = anchor_key(heading)
            at = next((h[0] for h in json.loads(headings) if anchor_key(h[2]) == key), None)
            if at is None:
                continue
        out.setdefault(query, Pair(query, source, target, at))
    return list(out.values())


def capture(db: Path, workspace: str, name: str, chosen: list[Pair]) -> tr.SetCapture:
    def judge(q: Pair, spans, x, tier) -> tr.Captured:
        keep = np.array([p != q.source for p, _, _ in spans], dtype=bool)
        y, ok = [], []
        for path, start, end in spans:
            section = path == q.target and (q.line is None or start <= q.line <= end)
            y.append(1 if section else -1 if path == q.target else 0)
            ok.append(section)
        doc = [p for p, _, _ in spans]
        x = x[keep] if len(x) else x
        return tr.Captured(
            q.query, "self", x, np.array(y)[keep], [d for d, k in zip(doc, keep, strict=True) if k],
            {q.target: 1}, np.array(ok, dtype=bool)[keep], tier[keep] if len(tier) else tier,
            has_line=q.has_line,
        )  # fmt: skip

    out = tr._capture(db, workspace, name, "golden", chosen, judge)
    out.kind = "self"
    return out


def _section(train: list[tr.SetCapture], preds: dict[str, list[np.ndarray]]):
    """The section model over `train`'s golden and self sets (train_ranking.fit_section's)."""
    as_golden = []
    for sc in train:
        if sc.kind in ("golden", "self"):
            copy = tr.SetCapture(sc.name, "golden", sc.queries, sc.features)
            as_golden.append(copy)
    return tr.fit_section(as_golden, preds)


def folds(work: Path, self_work: Path, modes: list[str], family: str, feature_set: str) -> None:
    """Each golden set left out; trained on the other sets plus, by mode, no self set (`none`),
    its own vault's (`own`), the other vaults' (`others`) or every one (`all`). The section
    model is fitted on the fold's training sets (self sets' heading pairs included); a mode
    `MODE:rank` or `MODE:section` gives the pairs to that model only."""
    sets = tr.load_sets(work)
    selves = tr.load_sets(self_work)
    for sc in selves:
        sc.kind = "self"
    held_sets = [s for s in sets if s.kind == "golden"]
    print("| self pairs | " + " | ".join(f"{s.name} R@1 / R@3 / section R@3" for s in held_sets)
          + " | BEIR mean nDCG@10 |")  # fmt: skip
    print("|---|" + "---:|" * (len(held_sets) + 1))
    cols = tr.columns_for(feature_set, "hybrid")
    for mode in modes:
        cells = []
        for held in sets:
            own = f"{held.name}-self"
            base, _, use = mode.partition(":")  # `:rank` / `:section`: the pairs teach only it
            extra = {
                "none": [],
                "own": [s for s in selves if s.name == own],
                "others": [s for s in selves if s.name != own],
                "all": selves,
            }[base]
            others = [s for s in sets if s.name != held.name]
            train = others + extra
            x, y, w = tr.training_arrays(others if use == "section" else train, "hybrid", 1.0)
            model = tr.fit(family, x, y, w, cols)
            preds = {s.name: [tr.predict(model, c, cols) for c in s.queries["hybrid"]]
                     for s in train}  # fmt: skip
            section = _section(others if use == "rank" else train, preds)
            mine = [tr.predict(model, c, cols) for c in held.queries["hybrid"]]
            cells.append((held, tr.metrics(held, "hybrid", mine, section)))
        golden = [
            f"{m['recall@1']:.3f} / {m['recall@3']:.3f} / {m.get('section@3', 0):.3f}"
            for s, m in cells
            if s.kind == "golden"
        ]
        beir = [m["ndcg@10"] for s, m in cells if s.kind == "beir"]
        print(f"| {mode} | " + " | ".join(golden) + f" | {np.mean(beir):.4f} |", flush=True)


def main() -> None:
    if sys.argv[1:2] == ["folds"]:
        f = argparse.ArgumentParser()
        f.add_argument("folds")
        f.add_argument("--work", type=Path, default=Path("/tmp/l2r/cap"))
        f.add_argument("--self-work", type=Path, default=Path("/tmp/l2r/cap-self"))
        f.add_argument("--modes", default="none,own,others,all")
        f.add_argument("--family", default="lr-c0.1")
        f.add_argument("--feature-set", default="relative")
        a = f.parse_args()
        folds(a.work, a.self_work, a.modes.split(","), a.family, a.feature_set)
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--name", required=True)
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--workspace", required=True)
    p.add_argument("--work", type=Path, default=Path("/tmp/l2r/cap-self"))
    p.add_argument("--limit", type=int, default=150)
    p.add_argument("--show", type=int, default=0, help="print this many pairs and stop")
    args = p.parse_args()
    found = pairs(args.db, args.workspace)
    rng = random.Random(0)
    headed = [p for p in found if p.has_line]  # half to a heading where the vault has them
    chosen = rng.sample(headed, min(args.limit // 2, len(headed)))
    rest = [p for p in found if not p.has_line]
    chosen += rng.sample(rest, min(args.limit - len(chosen), len(rest)))
    print(f"{args.name}: {len(found)} pairs, {sum(p.has_line for p in found)} to a heading;"
          f" {len(chosen)} chosen", file=sys.stderr)  # fmt: skip
    if args.show:
        for pair in chosen[: args.show]:
            print(f"{pair.query!r} -> {pair.target}:{pair.line}  (from {pair.source})")
        return
    args.work.mkdir(parents=True, exist_ok=True)
    cap = capture(args.db, args.workspace, f"{args.name}-self", chosen)
    (args.work / f"{args.name}-self.pkl").write_bytes(pickle.dumps(cap))


if __name__ == "__main__":
    main()
