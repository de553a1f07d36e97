"""What the docs do not answer: the questions a server was asked (an opt-in log) and the report
of those it did not answer, grouped by meaning."""
