"""Files of a workspace: found under its root (walker), read without leaving it (confine)."""
