"""Confinement that cannot race (issue 22): every read of a file's content walks from the root's
descriptor with O_NOFOLLOW and resolves links by hand, so a file or a folder swapped for a link
to outside the vault between two calls, or during one, is never read through."""

from __future__ import annotations

import os
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autodoc.engine import Engine
from autodoc.files.confine import (
    MAX_LINKS,
    MISSING,
    OUTSIDE,
    NotInWorkspace,
    OutsideRoot,
    open_inside,
    read_inside,
    read_lines,
)
from autodoc.serve.dispatcher import Dispatcher
from autodoc.wire.errors import RpcError

from ..conftest import lexical_workspace, long_count, write

SECRET = b"SECRET-outside-the-vault"


@pytest.fixture
def tree(tmp_path):
    root, out = tmp_path / "vault", tmp_path / "outside"
    write(root, "sub/a.md", "inside\n")
    write(out, "s.md", SECRET.decode() + "\n")
    (root / "rel.md").symlink_to("sub/a.md")
    (root / "abs.md").symlink_to(root / "sub" / "a.md")
    (root / "dirlink").symlink_to("sub")
    (root / "up.md").symlink_to("sub/../sub/a.md")
    (root / "sub" / "back.md").symlink_to("../rel.md")  # a link to a link, both inside
    (root / "evil.md").symlink_to(out / "s.md")
    (root / "evil-rel.md").symlink_to("../outside/s.md")
    (root / "outdir").symlink_to(out)
    (root / "loop.md").symlink_to("loop.md")
    os.mkfifo(root / "fifo.md")
    return root


@pytest.mark.parametrize(
    ("rel", "real"),
    [
        ("sub/a.md", "sub/a.md"),
        ("rel.md", "sub/a.md"),
        ("abs.md", "sub/a.md"),
        ("dirlink/a.md", "sub/a.md"),
        ("up.md", "sub/a.md"),
        ("sub/back.md", "sub/a.md"),
        ("sub/./a.md", "sub/a.md"),
        ("sub/../sub/a.md", "sub/a.md"),
    ],
)
def test_a_link_inside_the_vault_to_a_file_inside_it_is_read(tree, rel, real):
    assert read_inside(tree, rel, 1000) == (b"inside\n", real)


@pytest.mark.parametrize(
    ("rel", "error", "message"),
    [
        ("evil.md", OutsideRoot, OUTSIDE),
        ("evil-rel.md", OutsideRoot, OUTSIDE),
        ("outdir/s.md", OutsideRoot, OUTSIDE),
        ("../outside/s.md", OutsideRoot, OUTSIDE),
        ("sub/../../outside/s.md", OutsideRoot, OUTSIDE),
        ("loop.md", NotInWorkspace, "too many levels of symbolic links"),
        ("fifo.md", NotInWorkspace, MISSING),  # opened without blocking, refused by fstat
        ("sub", NotInWorkspace, MISSING),
        (".", NotInWorkspace, MISSING),
        ("missing.md", NotInWorkspace, MISSING),
        ("sub/a.md/x", NotInWorkspace, MISSING),
    ],
)
def test_outside_missing_or_not_a_file_is_refused_without_reading(tree, rel, error, message):
    with pytest.raises(error, match=message):
        read_inside(tree, rel, 1000)


def test_the_size_is_checked_on_the_open_descriptor(tree):
    with open_inside(tree, "rel.md") as (fd, real):
        assert (os.fstat(fd).st_size, real) == (7, "sub/a.md")
    with pytest.raises(ValueError, match="too large"):
        read_inside(tree, "rel.md", 6)
    assert MAX_LINKS >= 8  # deep but finite: chains of links inside a vault still work


def _swapper(entry, stop: threading.Event) -> None:
    """Swap `entry` and `entry.other` (a link to outside) as fast as it can, three renames a
    swap, so `entry` is by turns the real one, missing, and the link."""
    other, tmp = entry.with_name(entry.name + ".other"), entry.with_name(entry.name + ".tmp")
    while not stop.is_set():
        os.rename(entry, tmp)
        os.rename(other, entry)
        os.rename(tmp, other)


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_racing_swap_for_a_link_to_outside_is_never_read(tmp_path, what):
    """The race of issue 22 (10 of 658 calls read outside): a thread swaps a file (or the folder
    holding it) for a link to outside the vault while `doc.read` reads it thousands of times.
    Every answer is the vault's text or a documented -32602; no outside byte comes back."""
    root, out = tmp_path / "vault", tmp_path / "outside"
    write(root, "d/a.md", "# A\n\ninside\n")
    write(out, "a.md", SECRET.decode() + "\n")
    rpc = Dispatcher(Engine(tmp_path / "store" / "autodoc.db"))
    lexical_workspace(rpc, root)
    entry = root / "d" / "a.md" if what == "file" else root / "d"
    entry.with_name(entry.name + ".other").symlink_to(out / "a.md" if what == "file" else out)
    stop = threading.Event()
    swapper = threading.Thread(target=_swapper, args=(entry, stop))
    calls, answered, refused, leaked = long_count(3000, 30000), 0, 0, 0
    swapper.start()
    try:
        for _ in range(calls):
            try:
                got = rpc.call("doc.read", ["v", "d/a.md"])
            except RpcError as exc:
                assert exc.code == -32602, exc.to_dict()
                refused += 1
                continue
            answered += 1
            leaked += SECRET.decode() in got["text"]
    finally:
        stop.set()
        swapper.join()
        rpc.engine.close()
    print(f"race ({what}): {calls} calls, {answered} answered, {refused} refused, {leaked} leaked")
    assert leaked == 0
    assert answered > 0 and refused > 0, (answered, refused)  # the race really ran


def _reference(data: bytes, first: int, last: int | None, max_lines: int, max_bytes: int):
    """The whole file split in memory, then capped: what `read_lines` must equal."""
    lines = data.decode("utf-8", "replace").split("\n")
    if data.endswith(b"\n"):
        lines.pop()
    end = len(lines) if last is None else min(last, len(lines))
    out, size, cut = [], 0, False
    for raw in data.split(b"\n")[first - 1 : end]:
        if len(out) >= max_lines or size + len(raw) > max_bytes:
            if not out:
                out.append(raw[:max_bytes].decode("utf-8", "ignore"))
            cut = True
            break
        out.append(raw.decode("utf-8", "replace"))
        size += len(raw) + 1
    return out, len(lines), cut


@settings(max_examples=long_count(300, 3000), deadline=None)
@given(
    data=st.lists(
        st.sampled_from([b"a", b"bb", b"\n", b"\xc3\xa9", b"\xff", b"xyz" * 7]), max_size=40
    ).map(b"".join),
    first=st.integers(1, 12),
    span=st.one_of(st.none(), st.integers(0, 12)),
    max_lines=st.integers(1, 6),
    max_bytes=st.integers(1, 40),
    block=st.integers(1, 9),
)
def test_reading_lines_in_blocks_equals_splitting_the_whole_file(
    tmp_path_factory, data, first, span, max_lines, max_bytes, block
):
    """Block boundaries anywhere (inside a line, on a newline, inside a UTF-8 sequence): the
    window, the line count and `cut` are those of reading the whole file and capping it."""
    import autodoc.files.confine as confine

    root = tmp_path_factory.mktemp("lines")
    (root / "f.md").write_bytes(data)
    last = None if span is None else first + span
    want_lines, total, cut = _reference(data, first, last, max_lines, max_bytes)
    old, confine.READ_BLOCK = confine.READ_BLOCK, block
    try:
        got = confine.read_lines(
            root, "f.md", first, last, max_file_bytes=1000, max_lines=max_lines, max_bytes=max_bytes
        )
    finally:
        confine.READ_BLOCK = old
    assert got.total == max(total, 1)
    if first <= max(total, 1):
        assert (got.lines, got.cut) == (want_lines if total else [""], cut)


def test_a_file_swapped_for_a_link_to_an_identical_outside_file_is_not_fresh(tmp_path):
    """The freshness check reads through the same confined open: the same bytes and mtime
    behind a link to outside are not the indexed file."""
    root, out = tmp_path / "vault", tmp_path / "outside"
    write(root, "a.md", "# A\n\nalpha words\n")
    rpc = Dispatcher(Engine(tmp_path / "store" / "autodoc.db"))
    try:
        lexical_workspace(rpc, root)
        assert rpc.call("search.query", ["v", "alpha"])["stale"] == []
        out.mkdir()
        copy = out / "a.md"
        copy.write_bytes((root / "a.md").read_bytes())
        st = (root / "a.md").stat()
        os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
        (root / "a.md").unlink()
        (root / "a.md").symlink_to(copy)
        assert rpc.call("search.query", ["v", "alpha"])["stale"] == ["a.md"]
    finally:
        rpc.engine.close()


def test_re_indexing_a_file_while_it_is_swapped_for_a_link_to_outside(tmp_path):
    """What a watcher does during the race (found by the MCP race test: `os.path.realpath`
    raised FileNotFoundError out of a targeted run): every run completes, and no word from
    outside the vault is ever indexed."""
    root, out = tmp_path / "vault", tmp_path / "outside"
    write(root, "d/a.md", "# A\n\ninside\n")
    write(out, "a.md", SECRET.decode() + "\n")
    (root / "d" / "a.md.other").symlink_to(out / "a.md")
    rpc = Dispatcher(Engine(tmp_path / "store" / "autodoc.db"))
    lexical_workspace(rpc, root)
    stop = threading.Event()
    swapper = threading.Thread(target=_swapper, args=(root / "d" / "a.md", stop))
    swapper.start()
    try:
        for _ in range(long_count(300, 3000)):
            rpc.engine.indexing.index_paths("v", ["d/a.md"])
            assert rpc.call("search.query", ["v", "SECRET outside vault"])["hits"] == []
    finally:
        stop.set()
        swapper.join()
        rpc.engine.close()


def test_a_chain_of_links_is_followed_up_to_the_kernels_limit(tmp_path):
    root = tmp_path / "vault"
    write(root, "end.md", "the end\n")
    for n in range(MAX_LINKS + 1):  # link0 -> link1 -> ... -> end.md
        target = "end.md" if n == MAX_LINKS else f"link{n + 1}.md"
        (root / f"link{n}.md").symlink_to(target)
    assert read_inside(root, "link1.md", 100) == (b"the end\n", "end.md")  # 40 links
    with pytest.raises(NotInWorkspace, match=r"^too many levels of symbolic links$"):
        read_inside(root, "link0.md", 100)  # 41


def test_the_edges_of_the_size_limit_and_what_is_not_text(tmp_path):
    root = tmp_path / "vault"
    write(root, "exact.md", "x" * 99 + "\n")  # 100 bytes
    write(root, "big.md", "y" * 2_150_001)  # 2.150001 MB: shown as 2.2 (MB is 10^6 bytes)
    (root / "bin.md").write_bytes(b"# B\n\x00\x01")
    (root / "parent").symlink_to(tmp_path)  # an absolute link to the root's own parent
    assert read_inside(root, "exact.md", 100)[0] == b"x" * 99 + b"\n"  # at the limit: read
    with pytest.raises(ValueError, match=r"^file too large \(0\.0 MB\)$"):
        read_inside(root, "exact.md", 99)
    with pytest.raises(ValueError, match=r"^file too large \(2\.2 MB\)$"):
        read_inside(root, "big.md", 1_000_000)
    with pytest.raises(ValueError, match=r"^file too large \(2\.2 MB\)$"):
        read_lines(root, "big.md", 1, None, max_file_bytes=1_000_000, max_lines=9, max_bytes=99)
    for read in (
        lambda: read_inside(root, "bin.md", 100),
        lambda: read_lines(root, "bin.md", 1, None, max_file_bytes=99, max_lines=9, max_bytes=99),
    ):
        with pytest.raises(ValueError, match=r"^binary file \(NUL bytes\)$"):
            read()
    with pytest.raises(OutsideRoot):
        read_inside(root, "parent/vault/exact.md", 100)  # `..` of the root, by an absolute link
    assert read_inside(root, "sub//../exact.md", 100)[1] == "exact.md"  # empty parts skipped
    with pytest.raises(NotInWorkspace, match="cannot open the workspace root"):
        read_inside(tmp_path / "missing", "a.md", 100)


@pytest.mark.parametrize(
    ("text", "first", "last", "lines", "total", "cut"),
    [
        ("a\nb\nc\n", 1, 1, ["a"], 3, False),  # the window ends inside the block: the rest counted
        ("a\nb\nc\n", 2, 3, ["b", "c"], 3, False),
        ("a\nb\nc", 3, None, ["c"], 3, False),  # a last line without its newline
        ("a\nb\nc\nd\ne\n", 1, None, ["a", "b"], 5, True),  # max_lines 2
        ("a\n\n\n", 2, 2, [""], 3, False),
        ("", 1, None, [""], 1, False),  # an empty file is one empty line
    ],
)
def test_a_window_of_lines_in_one_block(tmp_path, text, first, last, lines, total, cut):
    root = tmp_path / "vault"
    write(root, "f.md", text)
    got = read_lines(root, "f.md", first, last, max_file_bytes=99, max_lines=2, max_bytes=99)
    assert (got.lines, got.total, got.cut) == (lines, total, cut)


def test_a_file_that_grows_while_it_is_read_is_refused_on_both_read_paths(tmp_path, monkeypatch):
    """The size is checked on the descriptor first; a file that grows past the limit between
    that check and the last block (here: an fstat that reports the size before it grew) is
    refused rather than read past the limit."""
    import autodoc.files.confine as confine

    root = tmp_path / "vault"
    write(root, "g.md", "z" * 100)
    real_fstat = os.fstat

    def small(fd):
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, *st[1:6], 10, *st[7:]))  # st_size: 10

    monkeypatch.setattr(confine.os, "fstat", small)
    grew = r"^file grew past the size limit while being read$"
    with pytest.raises(ValueError, match=grew):
        read_inside(root, "g.md", 50)
    with pytest.raises(ValueError, match=grew):
        read_lines(root, "g.md", 1, None, max_file_bytes=50, max_lines=9, max_bytes=99)
    monkeypatch.setattr(confine, "READ_BLOCK", 7)  # the count of what was read adds up blocks
    with pytest.raises(ValueError, match=grew):
        read_lines(root, "g.md", 1, None, max_file_bytes=50, max_lines=9, max_bytes=99)


def test_a_file_of_several_blocks_is_read_whole_and_in_order(tmp_path):
    """`read_inside` reads 1 MiB at a time: a 2.5 MiB file comes back byte for byte."""
    root = tmp_path / "vault"
    data = b"".join(b"%07d\n" % i for i in range(330_000))  # 2.64 MB, every line different
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "long.md").write_bytes(data)
    assert read_inside(root, "notes/long.md", 3_000_000)[0] == data


@pytest.mark.parametrize(
    ("max_bytes", "lines", "cut"),
    [
        (8, ["aaaa"], True),
        (9, ["aaaa", "bbbb"], True),
        (13, ["aaaa", "bbbb"], True),
        (14, ["aaaa", "bbbb", "cccc"], False),
    ],
)
def test_the_byte_cap_counts_every_kept_line_and_its_line_end(tmp_path, max_bytes, lines, cut):
    """A line is kept while the lines before it, each with its newline, and its own bytes fit:
    the second (4 bytes after 5) needs 9, the third (4 after 10) needs 14."""
    root = tmp_path / "vault"
    write(root, "f.md", "aaaa\nbbbb\ncccc\n")
    got = read_lines(root, "f.md", 1, None, max_file_bytes=99, max_lines=9, max_bytes=max_bytes)
    assert (got.lines, got.cut) == (lines, cut)


def test_a_file_that_cannot_be_opened_says_why(tmp_path, monkeypatch):
    """An open that fails for another reason than a link or a missing file (permissions, which
    root cannot be refused, stand in here) names the system's reason."""
    import errno

    import autodoc.files.confine as confine

    root = tmp_path / "vault"
    write(root, "secret.md", "# S\n")
    real_open = os.open

    def refused(path, flags, *args, **kwargs):
        if path == "secret.md":
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(confine.os, "open", refused)
    with pytest.raises(NotInWorkspace, match=r"^cannot open: Permission denied$"):
        read_inside(root, "secret.md", 100)
