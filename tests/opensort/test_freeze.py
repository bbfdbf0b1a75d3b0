"""The freeze (annotation/opensort/freeze.py): the board becomes a frozen taxonomy version,
each annotator's tag sets their round-1 labels through the one board mapping, and the cards
move through the usual states."""

from __future__ import annotations

import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.agreement.data import compute_study_report
from annotation.models import (
    Annotation,
    BoardType,
    CardState,
    CardStatus,
    Consensus,
    FreeTag,
    Group,
    Phase,
    Source,
    Study,
)
from annotation.opensort import board as ops
from annotation.opensort.freeze import FreezeRefused, freeze, plan
from tests.report.helpers import named

from .board_factories import SIX_CARDS, make_open_sort, tag_card, tag_six_cards

pytestmark = pytest.mark.django_db


def tag(study, name: str) -> FreeTag:
    return FreeTag.objects.get(study=study, name=name)


@pytest.fixture
def world(study):
    w = make_open_sort(study)
    tag_six_cards(w)
    return w


def consolidate(study, lead) -> dict[str, BoardType]:
    """The board of the done-when test: two types, each tag of alice merged with bob's."""
    ops.create_type(study, lead, "Ambiguous ask", "Intent", definition="The ask is unclear.")
    ops.create_type(study, lead, "Constraint broken", "Compliance", example="used numpy")
    ambiguous, broken = (
        BoardType.objects.get(name=n) for n in ("Ambiguous ask", "Constraint broken")
    )
    ops.merge_tags(study, lead, [tag(study, "vague ask").pk], tag(study, "unclear request").pk)
    ops.merge_tags(study, lead, [tag(study, "ignored rule").pk], tag(study, "broke constraint").pk)
    ops.rename_tag(study, lead, tag(study, "unclear request").pk, "Ambiguous ask")
    ops.set_tag_type(study, lead, tag(study, "unclear request").pk, ambiguous.pk)
    ops.set_tag_type(study, lead, tag(study, "broke constraint").pk, broken.pk)
    return {"ambiguous": ambiguous, "broken": broken}


def labels_of(study, user) -> list[frozenset[str]]:
    rows = Annotation.objects.filter(annotator=user, round=1, is_current=True)
    return [a.codes for a in rows.order_by("turn__index").prefetch_related("types")]


def test_the_plan_says_what_will_happen(study, world):
    consolidate(study, world["lead"])
    p = plan(study)
    assert (p.n_types, p.n_categories, p.n_tag_sets) == (2, 2, 12)
    assert p.experts == ["alice", "bob"]
    assert p.refusal == ""


def test_the_board_becomes_a_frozen_taxonomy_version_the_study_uses(study, world):
    board = consolidate(study, world["lead"])
    old = study.taxonomy_version
    result = freeze(study, world["lead"])
    study.refresh_from_db()
    version = result.version
    assert study.taxonomy_version == version != old
    assert version.frozen
    axis = version.axes.get()
    assert axis.multi_select
    types = {t.code: t for t in version.type_list()}
    assert set(types) == {"ambiguous_ask", "constraint_broken"}
    assert types["ambiguous_ask"].category.name == "Intent"
    assert types["ambiguous_ask"].definition == "The ask is unclear."
    assert types["constraint_broken"].example == "used numpy"
    assert sorted(t.hotkey for t in types.values()) == ["1", "2"]
    # provenance: each board type keeps its frozen type
    board["ambiguous"].refresh_from_db()
    assert board["ambiguous"].type == types["ambiguous_ask"]
    assert study.phase == Phase.CLOSED_SORT
    assert not Group.objects.get(pk=world["group"].pk).open_sorting


def test_each_label_is_that_annotators_own_tags_through_the_one_mapping(study, world):
    consolidate(study, world["lead"])
    freeze(study, world["lead"])
    alice, bob = world["experts"]
    mapping = {
        "vague ask": "ambiguous_ask",
        "unclear request": "ambiguous_ask",
        "ignored rule": "constraint_broken",
        "broke constraint": "constraint_broken",
    }
    expected_alice = [frozenset(mapping[n] for n in mine) for mine, _ in SIX_CARDS]
    expected_bob = [frozenset(mapping[n] for n in theirs) for _, theirs in SIX_CARDS]
    assert labels_of(study, alice) == expected_alice
    assert labels_of(study, bob) == expected_bob
    rows = Annotation.objects.filter(round=1)
    assert set(rows.values_list("source", flat=True)) == {Source.OPEN_SORT}
    assert set(rows.values_list("taxonomy_version", flat=True)) == {
        Study.objects.get(pk=study.pk).taxonomy_version_id
    }


def test_the_cards_go_through_the_usual_states(study, world):
    consolidate(study, world["lead"])
    freeze(study, world["lead"])
    states = [CardState.objects.get(turn=t, group=world["group"]).status for t in world["turns"]]
    # cards 1-4 and 6 agree after the mapping; card 5 (ambiguous vs constraint) is disputed
    assert states == [CardStatus.AGREED] * 4 + [CardStatus.DISPUTED, CardStatus.AGREED]
    unanimous = Consensus.objects.current().filter(group=world["group"])
    assert set(unanimous.values_list("method", flat=True)) == {"unanimous"}
    assert unanimous.count() == 5


def test_notes_travel_with_the_tag_set(study, world):
    alice = world["experts"][0]
    tag_card(world["turns"][0], world["group"], alice, "vague ask", note="hmm, maybe")
    consolidate(study, world["lead"])
    freeze(study, world["lead"])
    assert Annotation.objects.get(annotator=alice, turn=world["turns"][0]).note == "hmm, maybe"


def test_nobody_elses_tags_leak_into_a_label(study, world):
    """bob tagged card 4 with nothing; alice tagged it "vague ask": bob's label stays empty
    although the board merged alice's tag into his."""
    alice, bob = world["experts"]
    turn = world["turns"][3]
    tag_card(turn, world["group"], alice, "vague ask")
    consolidate(study, world["lead"])
    freeze(study, world["lead"])
    assert Annotation.objects.get(annotator=bob, turn=turn).codes == frozenset()
    assert Annotation.objects.get(annotator=alice, turn=turn).codes == {"ambiguous_ask"}


def test_it_is_refused_while_a_used_tag_has_no_type(study, world):
    lead = world["lead"]
    consolidate(study, lead)
    ops.unmerge_tag(study, lead, tag(study, "vague ask").pk)
    before = study.taxonomy_version_id
    with pytest.raises(FreezeRefused, match="1 tag\\(s\\) used on cards have no type: 'vague ask'"):
        freeze(study, lead)
    study.refresh_from_db()
    assert study.taxonomy_version_id == before
    assert not Annotation.objects.exists()
    assert study.phase == Phase.OPEN_SORT


def test_it_is_refused_without_types_or_open_sort(study, world):
    with pytest.raises(FreezeRefused, match="no type yet"):
        freeze(study, world["lead"])
    Study.objects.filter(pk=study.pk).update(phase=Phase.CLOSED_SORT)
    with pytest.raises(FreezeRefused, match="No group of this study is in the open sort"):
        freeze(Study.objects.get(pk=study.pk), world["lead"])


def test_it_happens_once(study, world):
    consolidate(study, world["lead"])
    freeze(study, world["lead"])
    n = Annotation.objects.count()
    with pytest.raises(FreezeRefused, match="already frozen"):
        freeze(study, world["lead"])
    assert Annotation.objects.count() == n
    with pytest.raises(ops.BoardFrozen):
        ops.create_type(study, world["lead"], "More")


def test_the_experts_kappa_on_the_consolidated_types_equals_scikit_learn(study, world):
    consolidate(study, world["lead"])
    freeze(study, world["lead"])
    alice, bob = world["experts"]
    report = compute_study_report(Study.objects.get(pk=study.pk), n_boot=0)
    pair = named(report["axes"]["type"]["report"]["pairs"])["alice|bob"]
    a = [",".join(sorted(s)) for s in labels_of(study, alice)]
    b = [",".join(sorted(s)) for s in labels_of(study, bob)]
    assert abs(pair["cohen_kappa"] - cohen_kappa_score(a, b)) < 1e-9
    assert pair["n_common_cards"] == 6
