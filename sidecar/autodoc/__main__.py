"""`python -m autodoc` is the `autodoc` command."""

import sys

from autodoc.serve.cli.main import main

if __name__ == "__main__":  # not when a worker process re-imports the main module
    sys.exit(main())
