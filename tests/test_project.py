"""The project's own promises: CI runs exactly the README's test command."""

from __future__ import annotations

import re

from .conftest import REPO


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
