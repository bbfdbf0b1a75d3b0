"""Gold-label and raw-annotation exports (DESIGN.md: `export_gold`). Plain functions: the
command and the export job only call them.

- columns.py: the columns of each file, their types, and who may have a file;
- gold.py: the gold export, a chunk of cards at a time as Arrow tables;
- raw.py: the raw export, every annotation row;
- writers.py: CSV, JSONL and Parquet, each written to a temporary file moved into place;
- arrow.py: the Arrow table operations of the gold export (its rows: db/arrow.py);
- episodes.py: the episode files (unit `episode`: gold and raw; unit `coverage`: the
  sessions' coverage ratings), issue 21.

Both exports stream: a study of any size never sits in memory at once (Label Studio's
lesson: 50k-record exports that time out).

File encodings (also in `export_gold --help`):
- JSONL: one object a line; a label set is a sorted list of type codes, `[]` is "no smell",
  `null` is "no record" (nobody labelled / no consensus yet).
- CSV: a label set is its codes joined with "|", `-` for the empty set ("no smell"), and an
  empty cell for null; every other null is an empty cell too. A text cell (header too) that
  begins like a spreadsheet formula (= + - @, tab, CR...) gets a leading apostrophe
  (annotation/csv_cells.py); numbers stay numbers.
- Parquet: label sets are list<string> columns (null vs [] kept); integers are nullable int64,
  and the file's pandas metadata makes `pandas.read_parquet` read them as "Int64" (a null
  would otherwise turn `from_round` or `confidence` into float64).
In CSV and JSONL an integer is always written as one (`2`, never `2.0`); pandas' own
`read_csv` / `read_json` still guess float64 for a column with empty cells, so read them with
`dtype={"from_round": "Int64"}` (`round`, `confidence` likewise).

Optional columns: `with_text` adds the turn's `user_text`, `reply_text` and `reply_parts`
(JSON). Blindness:
`blind_for=user` leaves out what that user may not see (access.round1_hidden_from): other
annotators' labels on the open cards of the groups they annotate (blank cells in the gold
file, rows left out of the raw one). The export job is always made blind for whoever started
it; the command line only with --blind-for.
"""

from .columns import (
    CHUNK_SIZE,
    EXPORT_FORMATS,
    GOLD_CHUNK_SIZE,
    GOLD_COLUMNS,
    GOLD_TEXT_CHUNK_SIZE,
    RAW_COLUMNS,
    TEXT_COLUMNS,
    UNITS,
    annotates_in,
    gold_columns,
    is_raw,
    label_columns,
    may_download,
    raw_columns,
)
from .episodes import (
    coverage_rows,
    episode_gold_rows,
    episode_raw_rows,
    write_coverage,
    write_episodes,
)
from .gold import gold_rows, gold_tables, write_gold
from .raw import raw_rows, write_raw

__all__ = [
    "CHUNK_SIZE",
    "EXPORT_FORMATS",
    "GOLD_CHUNK_SIZE",
    "GOLD_COLUMNS",
    "GOLD_TEXT_CHUNK_SIZE",
    "RAW_COLUMNS",
    "TEXT_COLUMNS",
    "UNITS",
    "annotates_in",
    "is_raw",
    "coverage_rows",
    "episode_gold_rows",
    "episode_raw_rows",
    "gold_columns",
    "gold_rows",
    "gold_tables",
    "label_columns",
    "may_download",
    "raw_columns",
    "raw_rows",
    "write_coverage",
    "write_episodes",
    "write_gold",
    "write_raw",
]
