"""A study's backup: dump_study writes one file, load_study reads it into another instance
(fileformat.py says what the file holds; graph.py which rows belong to a study)."""
