"""The project's own promises: CI runs exactly the README's test command."""

from __future__ import annotations

import re

from ..conftest import REPO


def readme_command(marker: str) -> str:
    text = (REPO / "README.md").read_text()
    m = re.search(rf"<!-- {marker} -->\s*```(?:sh|bash)?\n(.+?)\n```", text, re.S)
    assert m, f"README.md has no {marker} block"
    return m.group(1).strip()


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    assert "readme_block test-command" in ci or readme_command("test-command") in ci


def test_readme_setup_is_two_commands():
    assert len(readme_command("setup-command").splitlines()) == 1
    assert len(readme_command("test-command").splitlines()) == 1


# The name `autodoc` on PyPI is an unrelated package (py-autodoc, 2018): install advice that
# names it installs the wrong thing. Checked free on 2026-12-01: pypi.org/pypi/autodoc-search
# answered 404 (and /pypi/autodoc 200, "Autodoc Python implementation").
DISTRIBUTION = "autodoc-search"
WRONG_INSTALL = re.compile(
    r"\b(?:pip|pipx|uv (?:tool|pip)) install\s+(?:--?\S+\s+)*['\"]?autodoc(?![\w-])"
)


def test_the_distribution_name_is_not_the_taken_one():
    meta = re.search(r'^name = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert meta and meta.group(1) == DISTRIBUTION


def test_no_install_advice_names_the_unrelated_package():
    wrong = []
    for pattern in ("*.md", "doc/**/*.md", "doc/*.txt", "lua/**/*.lua", "sidecar/**/*.py"):
        for path in REPO.glob(pattern):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if WRONG_INSTALL.search(line):
                    wrong.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert wrong == []
    vimdoc = (REPO / "doc" / "autodoc.txt").read_text()
    assert DISTRIBUTION in vimdoc and "pipx install" in vimdoc
    assert DISTRIBUTION in (REPO / "lua" / "autodoc" / "health.lua").read_text()


def walkthrough(name: str) -> list[tuple[str, list[str]]]:
    """The README's `<!-- walkthrough: NAME -->` console block: (command, the lines it printed)."""
    text = (REPO / "README.md").read_text()
    m = re.search(rf"<!-- walkthrough: {name} -->\s*```console\n(.+?)\n```", text, re.S)
    assert m, f"README.md has no walkthrough: {name} block"
    steps: list[tuple[str, list[str]]] = []
    for line in m.group(1).splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


# What varies from run to run: times and rates.
_VARIES = re.compile(r"\d+(?:\.\d+)?(?= ?(?:ms|s)\b|/s\b)")


def masked(lines: list[str]) -> list[str]:
    return [_VARIES.sub("N", line.rstrip()) for line in lines]


def test_the_readme_walkthrough_on_the_sample_vault_prints_what_it_shows(tmp_path):
    """Each `$ autodoc …` of the sample-vault walk-through, run in order on a new store from
    the repository root, prints exactly the lines pasted under it (times and rates aside)."""
    import os
    import shlex
    import subprocess
    import sys

    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}
    env.pop("AUTODOC_DB", None)
    steps = walkthrough("sample")
    assert len(steps) >= 5
    for command, shown in steps:
        argv = shlex.split(command, comments=True)
        assert argv[0] == "autodoc", command
        run = subprocess.run([sys.executable, "-m", "autodoc", *argv[1:]], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=120)  # fmt: skip
        printed = run.stdout.splitlines()  # stderr in its place, as a terminal shows it
        assert masked(printed) == masked(shown), command
