"""What leaving files out costs the walk: `files.walker.scan` over a copy of a corpus (in /tmp:
ignore files are written into it), with no rules, with its `.gitignore` files honoured (one at
the root, one in every top-level folder of docs/), and with those plus `exclude` / `include`
options; optionally the walker of an earlier commit as the baseline. Interleaved, each run a
fresh `Rules` (nothing cached between runs); the median of `--runs`.

    git show f8e6a82:sidecar/autodoc/files/walker.py > /tmp/walker_before.py
    python bench/walk_rules.py ../shared/corpora/cpp-docs --runs 7 --before /tmp/walker_before.py
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from autodoc.files.ignore_rules import RuleOptions, Rules
from autodoc.files.walker import Hidden, find, scan

MAX_BYTES = 20_000_000
ONE_PATH = "docs/standard-library/array-class-stl.md"  # what a save or a watcher event checks
ROOT_GITIGNORE = "docs/atl/\n*-wizard.md\n"  # a folder (429 files) and a glob
NESTED_GITIGNORE = "*-structure.md\n!*-data-structure.md\n"  # a glob and a negation, per folder
OPTIONS = RuleOptions(
    exclude=("docs/mfc/", "*-deprecated*.md", "**/media/"),
    include=("docs/mfc/mfc-desktop-applications.md",),  # anchored: the walk enters docs/mfc/
)


def prepare(corpus: Path, work: Path) -> tuple[Path, int]:
    """A copy of the corpus with the ignore files written; (its root, ignore files)."""
    root = work / corpus.name
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(corpus, root, symlinks=True)
    (root / ".gitignore").write_text(ROOT_GITIGNORE)
    written = 1
    for folder in sorted((root / "docs").iterdir()):
        if folder.is_dir():
            (folder / ".gitignore").write_text(NESTED_GITIGNORE)
            written += 1
    return root, written


def load_before(path: Path) -> Callable[[Path], int]:
    spec = importlib.util.spec_from_file_location("walker_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["walker_before"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return lambda root: len(module.scan(root, MAX_BYTES, (), module.Hidden())[0])


def walker(options: RuleOptions) -> Callable[[Path], int]:
    def walk(root: Path) -> int:
        rules = Rules(os.path.realpath(root), options)
        found, _ = scan(root, MAX_BYTES, hidden=Hidden(), rules=rules)
        walk.left_out = rules.report()  # type: ignore[attr-defined]
        return len(found)

    return walk


def one_path(root: Path, options: RuleOptions, repeat: int = 200) -> tuple[float, float]:
    """Median µs of (a save: `find` of one path with fresh rules, ignore files read; a watcher
    event: `judge_path` with the watcher's rules, ignore files cached)."""
    real = os.path.realpath(root)
    saves, events = [], []
    watching = Rules(real, options)
    watching.judge_path(ONE_PATH)
    for _ in range(repeat):
        started = time.perf_counter()
        found, _ = find(root, [ONE_PATH], MAX_BYTES, rules=Rules(real, options))
        saves.append(time.perf_counter() - started)
        assert len(found) == 1
        started = time.perf_counter()
        watching.judge_path(ONE_PATH)
        events.append(time.perf_counter() - started)
    return statistics.median(saves) * 1e6, statistics.median(events) * 1e6


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("corpus", type=Path)
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--work", type=Path, default=Path("/tmp/walk-rules"))
    p.add_argument("--before", type=Path, help="an earlier walker.py: the baseline")
    args = p.parse_args()
    root, written = prepare(args.corpus, args.work)
    configs: dict[str, Callable[[Path], int]] = {}
    if args.before:
        configs["before: the walker without rules"] = load_before(args.before)
    configs["no rules (respect_gitignore false)"] = walker(RuleOptions(respect_gitignore=False))
    configs[f".gitignore honoured ({written} files)"] = walker(RuleOptions())
    configs["+ exclude (3) and include (1)"] = walker(OPTIONS)
    times: dict[str, list[float]] = {name: [] for name in configs}
    found: dict[str, int] = {}
    for walk in configs.values():  # once untimed: the page cache holds the tree
        walk(root)
    for _ in range(args.runs):
        for name, walk in configs.items():
            started = time.perf_counter()
            found[name] = walk(root)
            times[name].append(time.perf_counter() - started)
    base = statistics.median(times[next(iter(configs))])
    print(f"{root}: {os.cpu_count()} cores, {args.runs} runs each, interleaved")
    print("| walk | files found | median ms | runs (ms) | ratio |")
    print("|---|---:|---:|---|---:|")
    for name, runs in times.items():
        med = statistics.median(runs)
        shown = ", ".join(f"{t * 1000:.0f}" for t in runs)
        print(f"| {name} | {found[name]:,} | {med * 1000:.1f} | {shown} | {med / base:.2f}× |")
    print(f"\none path ({ONE_PATH}), median of 200:")
    print("| rules | a save: find, µs | a watcher event: judge_path, µs |")
    print("|---|---:|---:|")
    for name, options in (
        ("no rules", RuleOptions(respect_gitignore=False)),
        (".gitignore honoured", RuleOptions()),
        ("+ exclude and include", OPTIONS),
    ):
        save, event = one_path(root, options)
        print(f"| {name} | {save:.0f} | {event:.1f} |")
    for name, walk in configs.items():
        for row in getattr(walk, "left_out", []):
            print(f"  {name}: {row}")


if __name__ == "__main__":
    main()
