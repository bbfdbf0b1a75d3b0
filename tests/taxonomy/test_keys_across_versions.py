"""A type keeps its key across taxonomy versions, and a key whose type left (merged, split)
is never given to another type (issue 20, defect 2: after a merge and a split, Must-Not
Violation's `4` went to Ambiguous Target, and an annotator's habit mislabelled)."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.hotkeys import with_keys
from taxonomy.keys import SINGLE_KEYS
from taxonomy.models import PRESET_DIR, Taxonomy, TaxonomyVersion

pytestmark = pytest.mark.django_db


def form_keys(version: TaxonomyVersion) -> dict[str, str]:
    """{code: key} as the labels form shows them."""
    return {t.code: t.key for t in with_keys(version.type_list())}


def test_a_retired_key_is_not_given_to_a_new_type():
    v1 = Taxonomy.load_preset("interaction-smells")
    before = form_keys(v1)
    assert before["must_not_violation"] == "4"
    v2, _ = v1.derive(
        merge=[{"into": "must_do_omission", "from": ["must_not_violation"]}],
        split=[{"code": "ambiguous_instruction", "into": ["Ambiguous Target", "Ambiguous Goal"]}],
        add=[{"name": "Hallucinated API", "definition": "calls an API that does not exist"}],
    )
    after = form_keys(v2)
    # the kept types keep their keys
    for code in set(before) & set(after):
        assert after[code] == before[code], code
    # neither 4 (merged away) nor 1 (split away) is anybody's now
    assert "4" not in after.values() and "1" not in after.values()
    new = {code: key for code, key in after.items() if code not in before}
    assert len(new) == 3 and all(new.values())
    assert not set(new.values()) & set(before.values())
    assert set(v2.retired_keys) == {"1", "4"}
    # and a third version keeps both retired
    v3, _ = v2.derive(add=[{"name": "Silent Fallback", "definition": "swallows an error"}])
    assert set(v3.retired_keys) == {"1", "4"}
    assert form_keys(v3)["silent_fallback"] not in {"1", "4", *after.values()}


fresh = itertools.count()
changes = st.lists(
    st.tuples(st.sampled_from(["merge", "split", "add", "rename"]), st.integers(0, 50)),
    min_size=1,
    max_size=5,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=changes)
def test_keys_are_a_types_for_good_across_any_derivations(steps):
    """Whatever merges, splits, adds and renames follow one another: a code shows the same key
    in every version it is in, and no key ever shows for two codes (while keys are left)."""
    data = json.loads((PRESET_DIR / "interaction-smells.json").read_text(encoding="utf-8"))
    version = Taxonomy.create_from_data({**data, "slug": f"smells-{next(fresh)}"})
    owner: dict[str, str] = {}  # key -> the one code it ever stood for
    seen: dict[str, str] = {}  # code -> its key
    for n, (what, pick) in enumerate(steps):
        keys = form_keys(version)
        for code, key in keys.items():
            if code in seen:
                assert key == seen[code], (code, key, seen[code])
            seen.setdefault(code, key)
            if key:
                assert owner.setdefault(key, code) == code, (key, code, owner[key])
        codes = sorted(keys)
        a, b = codes[pick % len(codes)], codes[(pick + 1) % len(codes)]
        if what == "merge" and len(codes) > 2:
            spec = {"merge": [{"into": f"Merged {n}", "from": [a, b]}]}
        elif what == "split" and len(codes) > 1:
            spec = {"split": [{"code": a, "into": [f"Part {n} one", f"Part {n} two"]}]}
        elif what == "rename":
            spec = {"rename": {a: f"Renamed {n}"}}
        else:
            spec = {"add": [{"name": f"Added {n}", "definition": "d"}]}
        version, _ = version.derive(**spec)
    if len(owner) < len(SINGLE_KEYS):
        assert all(form_keys(version).values())
