"""Chunks labelled by another section than the one their text sits under (issue 55), per
corpus, by the oracle of tests/heading_labels.py (a CommonMark reading apart from the chunker):
files, chunks, mislabelled chunks and the heading bodies they hold. `--before REV` counts the
chunker of another revision too (a git worktree of it), in the same run.

    python bench/heading_labels.py [--shared ../shared] [--before 0142425] [--examples 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CORPORA = ["adr", "dendron-site", "obsidian-tasks", "cpp-docs"]


def before_tree(rev: str, work: Path) -> Path:
    """The sidecar of revision `rev`, unpacked under `work` (no worktree is added)."""
    tree = work / f"before-{rev}"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "sidecar"],
                             check=True, capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree / "sidecar"


def measure(corpora: Path, examples: int) -> dict[str, dict]:
    """The counts of the chunker this process imports."""
    from tests.heading_labels import count

    out = {}
    for name in CORPORA:
        found = count(corpora / name)
        out[name] = {
            "files": found.files,
            "chunks": found.chunks,
            "mislabelled_chunks": found.mislabelled,
            "heading_bodies": len(found.found),
            "files_with_one": len({m.path for m in found.found}),
            "examples": [
                f"{m.path}:{m.line} {m.heading!r} under {m.breadcrumb!r}"
                for m in found.found[:examples]
            ],
        }
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shared", default=str(REPO.parent / "shared"))
    p.add_argument("--before", help="a revision to count too, in the same run")
    p.add_argument("--examples", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)  # one revision
    args = p.parse_args()
    corpora = Path(args.shared) / "corpora"
    if args.measure:
        print(json.dumps(measure(corpora, args.examples)))
        return
    runs: list[tuple[str, str | None]] = [("now", None)]
    if args.before:
        work = Path(tempfile.mkdtemp(prefix="autodoc-labels-"))
        runs.insert(0, (args.before, str(before_tree(args.before, work))))
    results = {}
    for label, sidecar in runs:
        env = dict(os.environ)
        if sidecar:
            env["PYTHONPATH"] = os.pathsep.join([sidecar, env.get("PYTHONPATH", "")])
        cmd = [sys.executable, __file__, "--shared", args.shared, "--measure",
               "--examples", str(args.examples)]  # fmt: skip
        proc = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
        results[label] = json.loads(proc.stdout)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print("| corpus | files | chunks | mislabelled chunks | heading bodies | files |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in CORPORA:
        cells = [
            " → ".join(f"{results[label][name][key]:,}" for label, _ in runs)
            for key in ("files", "chunks", "mislabelled_chunks", "heading_bodies", "files_with_one")
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    for label, _ in runs:
        for name in CORPORA:
            for line in results[label][name]["examples"]:
                print(f"{label} {name}: {line}")


if __name__ == "__main__":
    main()
