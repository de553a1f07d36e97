"""Conformance over every note of real vaults through a real LSP client
(tests/vault_conformance.py): per vault, the notes whose outline is the index's headings plus
an unsaved one, those where completion after a typed `[[` answers, go-to-definition on every
link against an oracle that reads links as Obsidian, Dendron or GitHub do, and `autodoc check`
in a second process beside the server: its exit status and broken links by cause. `--before
REV` runs the same with the sidecar of another revision (a git worktree of it), in the same
run.

    python bench/vault_conformance.py [--shared ../shared] [--before 6d048d7] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.vault_conformance import conform  # noqa: E402

VAULTS = [  # (name, folder under corpora/, the dialect its own tool reads)
    ("dendron-site", "dendron-site", "dendron"),
    ("obsidian docs", "obsidian-tasks/docs", "obsidian"),
    ("obsidian contributing", "obsidian-tasks/contributing", "obsidian"),
    ("obsidian Tasks-Demo", "obsidian-tasks/resources/sample_vaults/Tasks-Demo", "obsidian"),
    ("adr", "adr", "markdown"),
    ("cpp-docs (300 of build/)", "cpp-docs", "markdown"),
]
CPP_SAMPLE = 300


def cpp_sample(corpora: Path, work: Path) -> Path:
    """The first 300 notes of cpp-docs' build/ (by path), copied with their folders."""
    root = work / "cpp-docs-sample"
    if not root.exists():
        src = corpora / "cpp-docs"
        for path in sorted((src / "docs" / "build").rglob("*.md"))[:CPP_SAMPLE]:
            dest = root / path.relative_to(src)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
    return root


def before_tree(rev: str, work: Path) -> Path:
    tree = work / f"before-{rev}"
    if not tree.exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), rev],
                       check=True, capture_output=True)  # fmt: skip
    return tree / "sidecar"


def row(name: str, figures: dict) -> str:
    t, c = figures["tally"], figures["check"]
    causes = ", ".join(f"{k} {v}" for k, v in sorted(c.get("links_by_cause", {}).items()))
    check = f"exit {c['exit']}" + (f": {c['unresolved']} unresolved ({causes})" if "unresolved"
                                   in c else ": could not run")  # fmt: skip
    return (
        f"| {name} | {t['notes']} | {t['outline_equal']} | {t['completion_answered']} |"
        f" {t['agree']} / {t['links']} | {1000 * t['seconds'] / max(t['notes'], 1):.1f} |"
        f" {check} |"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shared", default=str(REPO.parent / "shared"))
    p.add_argument("--before", help="a revision to measure too, in the same run")
    p.add_argument("--only", help="the vaults to run, by name (comma-separated substrings)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    corpora = Path(args.shared) / "corpora"
    work = Path(tempfile.mkdtemp(prefix="autodoc-vaults-"))
    runs = [("now", None)]
    if args.before:
        runs.insert(0, (args.before, before_tree(args.before, work)))
    results: dict[str, dict[str, dict]] = {}
    for label, sidecar in runs:
        for name, folder, dialect in VAULTS:
            if args.only and not any(o in name for o in args.only.split(",")):
                continue
            root = cpp_sample(corpora, work) if name.startswith("cpp") else corpora / folder
            db = work / label / name.replace(" ", "_") / "autodoc.db"
            results.setdefault(label, {})[name] = conform(root, db, dialect, sidecar=sidecar)
    if args.json:
        print(json.dumps(results, indent=2, default=str))
        return
    for label, by_vault in results.items():
        print(f"\n#### {label}\n")
        print("| vault | notes | outline = index + unsaved | `[[` completes | definitions"
              " agree | ms / note | `autodoc check` beside the server |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---|")
        for name, figures in by_vault.items():
            print(row(name, figures))


if __name__ == "__main__":
    main()
