"""The command line: `autodoc` and its commands."""
