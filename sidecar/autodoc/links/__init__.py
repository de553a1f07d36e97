"""What a link is: how a vault writes one (its dialect), what it leads to, and how to write,
follow, complete, rename and count one. The parser finds where a link is written (`parse/`);
everything past that is here, so the index, the editor's features and `autodoc check` read a
link the same way."""
