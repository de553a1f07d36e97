"""Neovim with the real picker plugins, Emacs with eglot, the Lua linters."""
