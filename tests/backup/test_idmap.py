"""IdMap (old id -> new id, kept as runs) answers like a dict for any insertion order."""

from hypothesis import given
from hypothesis import strategies as st

from annotation.backup.idmap import IdMap

pairs = st.lists(
    st.tuples(st.integers(1, 60), st.integers(1, 60)), unique_by=lambda p: p[0], max_size=80
)


@given(pairs, st.booleans())
def test_idmap_is_a_dict(items, ordered):
    if ordered:  # the loader's case: old ids ascending, new ids mostly consecutive
        items = sorted(items)
    ids, expected = IdMap(), {}
    for old, new in items:
        ids.add(old, new)
        expected[old] = new
    for old in range(0, 62):
        assert ids.get(old) == expected.get(old)
    assert len(ids) == len(expected)


def test_consecutive_ids_are_one_run():
    ids = IdMap()
    for i in range(1, 100_001):
        ids.add(i, i + 500)
    assert ids.runs == 1 and ids.get(77) == 577 and ids.get(100_001) is None
