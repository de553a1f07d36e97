"""A real store, real servers as processes, the shared corpora."""
