"""The open card sort (issue 11): the consolidation board (board.py), the freeze of the board
into a taxonomy version (freeze.py), and who may see the board (access rule in board.py)."""
