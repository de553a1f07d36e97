"""Per-kind tables from `autodoc eval VAULT --golden FILE --json` reports, before and after.

    python bench/golden_tables.py before.json after.json [--sets lexical,semantic,hybrid]

Prints, per stage set, one row per kind: Recall@1, Recall@3, section Recall@3 and MRR@10 as
`before → after`, then the negative queries flagged and the answerable ones doubted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _cell(before: float | None, after: float | None) -> str:
    if after is None:
        return "–"
    if before is None or abs(before - after) < 5e-4:
        return f"{after:.3f}"
    return f"{before:.3f} → **{after:.3f}**"


def tables(before: dict, after: dict, sets: list[str]) -> list[str]:
    lines = []
    for label in sets:
        if label not in after["results"]:
            continue
        b, a = before["results"].get(label, {}), after["results"][label]
        lines += [f"**{label}**", ""]
        lines += ["| kind | queries | Recall@1 | Recall@3 | section Recall@3 (n) | MRR@10 |"]
        lines += ["|---|---:|---:|---:|---:|---:|"]
        kinds = [k for k in a["kinds"] if k != "negative"] + ["all"]
        for kind in kinds:
            sa = a["all"] if kind == "all" else a["kinds"][kind]
            sb = (b.get("all") if kind == "all" else b.get("kinds", {}).get(kind)) or {}
            cells = [f"**{kind}**" if kind == "all" else kind, str(sa["queries"])]
            for metric in ("recall@1", "recall@3", "section_recall@3", "mrr@10"):
                cell = _cell(sb.get(metric), sa[metric])
                if metric == "section_recall@3":
                    cell += f" ({sa['with_line']})"
                cells.append(cell)
            lines.append("| " + " | ".join(cells) + " |")
        flagged = a["all"]["negatives_flagged"]
        doubted = a["all"]["answerable_doubted"]
        lines += [
            "",
            f"negative queries flagged (`missing` or confidence none): "
            f"{_cell(b.get('all', {}).get('negatives_flagged'), flagged)} of "
            f"{a['all']['negatives']}; answerable queries marked low or none: "
            f"{_cell(None, doubted)}",
            "",
        ]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--sets", default="lexical,semantic,hybrid")
    args = ap.parse_args()
    before, after = (json.loads(p.read_text()) for p in (args.before, args.after))
    print("\n".join(tables(before, after, args.sets.split(","))))


if __name__ == "__main__":
    main()
