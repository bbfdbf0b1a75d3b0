"""Bad records fail with a clear error naming the row and the field; label sets are compared
as sets whatever container they come in."""

from __future__ import annotations

import pandas as pd
import pytest

from annotation.agreement.stats import agreement_report

from .factories import CODES, records_from


def test_it_names_the_row_of_an_unknown_label_code():
    records = records_from([(0, "alice", "g", ["a"]), (0, "bob", "g", ["a", "typo"])])
    with pytest.raises(ValueError, match=r"row 1: field 'labels' has unknown label code 'typo'"):
        agreement_report(records, CODES)


def test_it_names_both_rows_of_a_duplicate_record():
    records = records_from(
        [(0, "alice", "g", ["a"]), (1, "alice", "g", []), (0, "alice", "g", ["b"])]
    )
    with pytest.raises(
        ValueError,
        match=r"row 2: duplicate record for card 0 and annotator 'alice' \(first at row 0\)",
    ):
        agreement_report(records, CODES)


def test_it_names_a_missing_column():
    records = pd.DataFrame({"card": [1], "annotator": ["alice"], "labels": [["a"]]})
    with pytest.raises(ValueError, match="missing column"):
        agreement_report(records, CODES)


def test_it_refuses_missing_labels_and_a_bare_string():
    records = pd.DataFrame(
        {"card": [0, 0], "annotator": ["alice", "bob"], "group": "g", "labels": [["a"], None]}
    )
    with pytest.raises(ValueError, match=r"row 1: field 'labels' is missing"):
        agreement_report(records, CODES)
    records["labels"] = [["a"], "a"]
    with pytest.raises(ValueError, match=r"row 1: field 'labels' must be a list or set"):
        agreement_report(records, CODES)


def test_it_treats_lists_in_any_order_as_the_same_set():
    as_sets = records_from(
        [
            (0, "alice", "g", ["a", "b"]),
            (0, "bob", "g", ["b", "a"]),
            (1, "alice", "g", []),
            (1, "bob", "g", ["c"]),
        ]
    )
    as_lists = as_sets.assign(labels=[["a", "b"], ["b", "a"], [], ["c"]])
    ours = agreement_report(as_lists, CODES, n_boot=20)
    assert ours == agreement_report(as_sets, CODES, n_boot=20)
    assert ours["pairs"]["alice|bob"]["percent_agreement"] == 0.5


def test_it_refuses_more_than_64_codes_per_axis():
    records = records_from([(0, "alice", "g", [])])
    with pytest.raises(ValueError, match="at most 64 label codes"):
        agreement_report(records, [f"t{i}" for i in range(65)])
