"""Apply a `links.rename` / `links.file_renamed` answer to the files of a root, as an editor
would (the tests' and bench/rename_roundtrip.py's stand-in for one): each file's edits on its
text as it is, written atomically (a temporary file beside it, then `os.replace`), then the
file renamed. Nothing is written outside the root."""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any


# Columns counted here apart from engine/navigation.py's on purpose: the applier checks the
# server's columns the way an editor counts them, not with the code under test.
def _width(char: str, units: str) -> int:
    code = ord(char)
    if units == "utf-16":
        return 2 if code > 0xFFFF else 1
    if units == "utf-8":
        return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return 1


def column(line: str, units_column: int, units: str) -> int:
    """A column in `units` as a string offset into `line`."""
    counted = index = 0
    for char in line:
        if counted >= units_column:
            break
        counted += _width(char, units)
        index += 1
    return index


def inside(root: Path, rel: str) -> Path:
    path = (root / rel).resolve()
    if not path.is_relative_to(root.resolve()):
        raise ValueError(f"{rel} is outside {root}")
    return path


def edited(text: str, edits: list[dict[str, Any]], units: str) -> str:
    """`text` with the edits made (1-based lines, columns in `units`, on the text as given)."""
    lines = text.split("\n")
    bom = 1 if lines and lines[0].startswith("\ufeff") else 0  # the server reads past a BOM
    for e in sorted(edits, key=lambda e: (e["line"], e["start"]), reverse=True):
        i = e["line"] - 1
        line = lines[i]
        shown = line[bom:] if i == 0 else line
        skip = bom if i == 0 else 0
        start = column(shown, e["start"], units) + skip
        end = column(shown, e["end"], units) + skip
        lines[i] = line[:start] + e["new_text"] + line[end:]
    return "\n".join(lines)


def apply(root: Path, answer: dict[str, Any], units: str = "utf-32") -> list[str]:
    """Make the answer's edits under `root`, then rename its file; the paths written."""
    by_path: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in answer["edits"]:
        by_path[e["path"]].append(e)
    for rel, edits in by_path.items():
        path = inside(root, rel)
        text = path.read_bytes().decode("utf-8")
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".rename-")
        with os.fdopen(fd, "wb") as out:
            out.write(edited(text, edits, units).encode("utf-8"))
        os.replace(tmp, path)
    written = sorted(by_path)
    if answer.get("new_path"):
        old, new = inside(root, answer["path"]), inside(root, answer["new_path"])
        if new.exists() and new != old:
            raise FileExistsError(new)
        new.parent.mkdir(parents=True, exist_ok=True)
        os.rename(old, new)
        written.append(answer["new_path"])
    return written
