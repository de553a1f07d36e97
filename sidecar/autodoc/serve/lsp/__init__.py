"""`autodoc serve`: the Language Server Protocol front end (pygls)."""
