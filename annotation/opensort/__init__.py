"""The open card sort (issue 11): free tags on cards (tagging.py), their consolidation on a
board (board.py, reading.py, analytics.py), who may see it (access.py), and the freeze of
the board into a taxonomy version (freeze.py)."""
