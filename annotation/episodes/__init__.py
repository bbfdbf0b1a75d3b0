"""Episodes (issue 21): stretches of a coding-agent session in which the agent diverged from
what the developer wanted. `parts` says which stored text a quote lies in and finds a quote
there; `importer` reads an extractor's JSONL (`import_episodes`); `judgements` reads people's
judgements and coverage ratings (`import_annotations`); `measures` computes the study's
figures from plain data (no ORM) and `report` reads them from the database."""
