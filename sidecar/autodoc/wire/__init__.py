"""What crosses the wire: every object sent (protocol), errors, limits, workspace options."""
