"""In process: no subprocess, no Neovim, no shared corpus; seconds. `pytest -m unit`."""
