"""Study intake (issue 10): the steps between a raw log file and the study's conversation set."""
