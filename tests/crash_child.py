"""The writer that tests/integration/test_reliability.py kills: index / edit / create / delete
cycles, forever.

    python tests/crash_child.py STORE_DB VAULT SEED

Every edit writes one marker into every section of a document, so a reader (or the check after
a kill) can tell which version of the file each chunk came from. Prints `ready` once the engine
is open, then `cycle N` after each run, so the parent can kill it at any point of a run.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from autodoc.engine import Engine

SECTIONS = 4


def body(name: str, marker: int) -> str:
    parts = [
        f"## Part {i}\n\nmk{marker} sentinel {name} paragraph {i} about lease recovery.\n"
        for i in range(SECTIONS)
    ]
    return f"# {name}\n\n" + "\n".join(parts)


def main() -> int:
    db, vault, seed = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    engine = Engine(db)
    print("ready", flush=True)
    cycle = 0
    marker = seed * 1000
    while True:
        cycle += 1
        files = sorted(vault.glob("*.md"))
        for _ in range(rng.randint(1, 4)):
            op = rng.random()
            marker += 1
            if op < 0.55 and files:  # edit: a new marker in every section
                path = rng.choice(files)
                path.write_text(body(path.stem, marker))
            elif op < 0.8:  # create
                (vault / f"n{seed}-{marker}.md").write_text(body(f"n{seed}-{marker}", marker))
            elif files:  # delete
                rng.choice(files).unlink(missing_ok=True)
            files = sorted(vault.glob("*.md"))
        if rng.random() < 0.5:
            engine.indexing.index_run("v")  # a whole run, then its embeddings
        else:
            changed = [p.name for p in files[: rng.randint(1, 5)]]
            engine.indexing.index_paths("v", changed)  # a targeted run, as a save
            engine.indexing.embed_run("v", incremental=True)
        print(f"cycle {cycle}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
