"""Cells of every CSV the app writes are data, never a spreadsheet formula (OWASP's CSV
injection rule): a text cell that begins with = + - @, a tab, a carriage return, a line
feed or a NUL (or the full-width = + - @ that some spreadsheets read as the ASCII ones)
gets a leading apostrophe, which a spreadsheet shows as text and does not evaluate. The
csv module's quoting (RFC 4180) keeps a separator or a quote inside a cell from starting a
new one, so a formula cannot hide after a comma either.

Only text is changed: a number the app computed (a count, a share, a kappa of -0.25) is
passed as a number and written as one, so its column stays numeric in a spreadsheet and in
pandas; a number held as text (a name like "-1") is neutralised like any other text.
Parquet and JSONL need none of this: no spreadsheet evaluates their values."""

from __future__ import annotations

from collections.abc import Iterable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\0", "＝", "＋", "－", "＠")


def neutralise(cell: object) -> object:
    """A text cell a spreadsheet would run as a formula, with a leading apostrophe; any
    other value (a number, None, a harmless text) unchanged."""
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS):
        return "'" + cell
    return cell


def neutralise_row(row: Iterable[object]) -> list[object]:
    return [neutralise(cell) for cell in row]


class SafeWriter:
    """A csv.writer whose rows (the header too) are neutralised cell by cell."""

    def __init__(self, writer) -> None:
        self._writer = writer

    def writerow(self, row: Iterable[object]) -> None:
        self._writer.writerow(neutralise_row(row))
