"""The rename round trip on a copy of ../shared/corpora/dendron-site (wiki links with headings
and aliases; skipped when absent): the most-linked note and a linked heading renamed through
`autodoc --call links.rename`, the edits applied, the copy indexed again. `autodoc check` finds
no new unresolved link, and every link the index held to the note (the heading) before leads to
it after, each rewritten or left as written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ..conftest import corpus
from ..rename_roundtrip import round_trip

pytestmark = pytest.mark.corpus


def test_renaming_the_most_linked_note_and_a_heading_keeps_every_link(tmp_path: Path):
    root = tmp_path / "dendron-site"
    shutil.copytree(corpus("dendron-site"), root)
    got = round_trip(root, tmp_path / "store" / "autodoc.db", "release-notes", "Renamed section")
    note, heading = got["note"], got["heading"]
    assert got["new_unresolved"] == [] and got["unresolved_after"] <= got["unresolved_before"]
    assert note["links_before"] >= 50  # the most-linked note: vault/changelog.md, 89 links
    assert note["rewritten"] + note["kept"] == note["links_before"] == note["links_after"]
    assert note["rewritten"] > 0 and note["files"] > 1
    assert not (root / note["path"]).exists() and (root / note["new_path"]).exists()
    assert heading["rewritten"] == heading["links_before"] == heading["links_after"] >= 1
