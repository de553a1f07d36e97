"""`python -m autodoc` is the `autodoc` command."""

import sys

from .cli import main

sys.exit(main())
