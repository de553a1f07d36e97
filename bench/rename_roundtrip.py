"""The rename round trip on a copy of a vault (tests/rename_roundtrip.py), with its figures:
links rewritten against the links the index held, files touched, the time `links.rename` took
(in one process, and as `autodoc --call` with its start-up), and `autodoc check` before and
after. The copy is made under --work (default: a new folder in /tmp); the corpus is not touched.

    python bench/rename_roundtrip.py [--corpus ../shared/corpora/dendron-site] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.rename_roundtrip import round_trip  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default=str(REPO.parent / "shared/corpora/dendron-site"))
    p.add_argument("--work", help="folder for the copy and its store (default: a new temp one)")
    p.add_argument("--note-name", default="release-notes")
    p.add_argument("--heading-name", default="Renamed section")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="autodoc-rename-"))
    root = work / "vault"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(args.corpus, root)
    figures = round_trip(root, work / "store" / "autodoc.db", args.note_name, args.heading_name)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    note, heading = figures["note"], figures["heading"]
    print(f"{figures['files']} Markdown files, indexed in {figures['index_s']} s;"
          f" {figures['cores']} cores")  # fmt: skip
    print("| renamed | links to it before | rewritten | kept as written | files touched |"
          " links.rename (in process) | autodoc --call | links to it after |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| note `{note['path']}` → `{note['new_path']}` | {note['links_before']} |"
          f" {note['rewritten']} | {note['kept']} | {note['files']} | {note['call_ms']} ms |"
          f" {note['cli_s']} s | {note['links_after']} |")  # fmt: skip
    print(f"| heading `{heading['heading']}` of `{heading['path']}` | {heading['links_before']} |"
          f" {heading['rewritten']} | – | {heading['files']} | {heading['call_ms']} ms |"
          f" {heading['cli_s']} s | {heading['links_after']} |")  # fmt: skip
    new = len(figures["new_unresolved"])
    print(f"\n`autodoc check`: {figures['unresolved_before']} unresolved links before,"
          f" {figures['unresolved_after']} after; new: {new}")  # fmt: skip


if __name__ == "__main__":
    main()
