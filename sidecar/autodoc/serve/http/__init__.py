"""HTTP: the team server, its workers and their tokens."""
