"""The reproducible draw (annotation/intake/sampling.py): the same seed draws the same
conversations whatever their database ids, strata get their proportional share within one,
and a draw refuses what would lose work; `manage.py sample` on top of it."""

from __future__ import annotations

import random
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from hypothesis import given
from hypothesis import strategies as st

from annotation.intake.sampling import (
    SamplingRefused,
    Unit,
    allocate,
    draw,
    draw_sample,
    language_of,
    parse_stratify,
    turns_bucket,
)
from annotation.models import Conversation, Sample, SetAside
from tests.factories import label, make_conversation, make_group, make_study


def _units(n: int, strata=("",)) -> list[Unit]:
    return [Unit(("f.jsonl", i, f"c{i}", 0, ""), i + 1, strata[i % len(strata)]) for i in range(n)]


# -- the pure draw --------------------------------------------------------------------------


def test_it_draws_the_same_units_with_the_same_seed():
    units = _units(1000)
    assert draw(units, 50, seed=7) == draw(units, 50, seed=7)
    assert sorted(draw(units, 50, seed=7)[0]) != sorted(draw(units, 50, seed=8)[0])


def test_it_draws_by_key_never_by_id_or_order():
    units = _units(500, strata=("a", "b", "c"))
    # the same conversations with other ids, given in another order: the same keys drawn
    renumbered = [Unit(u.key, 10_000 - u.pk, u.stratum) for u in units]
    random.Random(1).shuffle(renumbered)
    key_of = {u.pk: u.key for u in units} | {u.pk: u.key for u in renumbered}
    first, strata = draw(units, 40, seed=3)
    second, strata_again = draw(renumbered, 40, seed=3)
    assert sorted(key_of[pk] for pk in first) == sorted(key_of[pk] for pk in second)
    assert strata == strata_again


def test_it_allocates_by_the_largest_remainder():
    # 10 of 3 + 3 + 4: exact shares 3.33, 3.33, 4.44 -> floors 3, 3, 4 (one left): the
    # largest remainder (c, .44) takes it
    assert allocate({"a": 3, "b": 3, "c": 4}, 10) == {"a": 3, "b": 3, "c": 4}
    assert allocate({"a": 30, "b": 30, "c": 40}, 10) == {"a": 3, "b": 3, "c": 4}
    # 5 of 10/10/10: 1.67 each, floors 1: the two left go by name on the tie
    assert allocate({"b": 10, "a": 10, "c": 10}, 5) == {"a": 2, "b": 2, "c": 1}
    with pytest.raises(ValueError, match="cannot draw 31 from 30"):
        allocate({"a": 10, "b": 20}, 31)


@given(
    st.dictionaries(st.text(min_size=1, max_size=5), st.integers(0, 400), min_size=1),
    st.data(),
)
def test_its_strata_hold_their_proportional_share_within_one(sizes, data):
    total = sum(sizes.values())
    n = data.draw(st.integers(0, total))
    quota = allocate(sizes, n)
    assert sum(quota.values()) == n
    for k, size in sizes.items():
        assert 0 <= quota[k] <= size
        if total:
            assert abs(quota[k] - n * size / total) < 1


@given(st.lists(st.sampled_from("abcde"), min_size=1, max_size=300), st.integers(0, 2**32))
def test_its_draw_follows_the_allocation(strata, seed):
    units = [Unit((i,), i, s) for i, s in enumerate(strata)]
    n = len(units) // 3
    chosen, counts = draw(units, n, seed)
    assert len(set(chosen)) == n
    by_pk = {u.pk: u.stratum for u in units}
    for name, c in counts.items():
        assert c["drawn"] == sum(by_pk[pk] == name for pk in chosen)
        assert c["population"] == strata.count(name)
        assert abs(c["drawn"] - n * c["population"] / len(units)) < 1


def test_it_buckets_turns_and_names_no_language_unknown():
    assert [turns_bucket(t) for t in (1, 2, 3, 4, 5, 9, 10, 250)] == [
        "1", "2", "3-4", "3-4", "5-9", "5-9", "10+", "10+",
    ]  # fmt: skip
    assert [language_of(v) for v in ("Python", None, "", "Nolang", "unknown")] == [
        "python", "unknown", "unknown", "unknown", "unknown",
    ]  # fmt: skip


def test_it_refuses_an_unknown_stratum_by_name():
    assert parse_stratify("source, turns") == ["source", "turns"]
    with pytest.raises(ValueError, match="cannot stratify by model: choose from source"):
        parse_stratify("source,model")


# -- the draw in the database ---------------------------------------------------------------


def _conversations(study, specs):
    """specs: (external_id, line, n_turns, source_format, language)"""
    for ext, line, n_turns, fmt, lang in specs:
        Conversation.objects.create(
            study=study,
            external_id=ext,
            source_format=fmt,
            source_file="data.jsonl",
            source_line=line,
            n_turns=n_turns,
            metadata={"language": lang} if lang else {},
        )


def _specs(n: int = 120):
    langs = ["English", "Chinese", None]
    return [
        (f"c{i:03}", i, 1 + i % 6, "wildchat" if i % 4 else "lmsys", langs[i % 3])
        for i in range(1, n + 1)
    ]


def _drawn(study) -> list[str]:
    rows = Conversation.objects.filter(study=study).in_set()
    return sorted(rows.values_list("external_id", flat=True))


@pytest.mark.django_db
def test_the_same_call_draws_the_same_conversations_whatever_the_ids():
    one, two = make_study("one"), make_study("two")
    specs = _specs()
    _conversations(one, specs)
    _conversations(two, list(reversed(specs)))  # other ids for the same records
    for study in (one, two):
        draw_sample(study, n=30, seed=7, stratify=["source", "language"], min_turns=2)
    assert _drawn(one) == _drawn(two)
    assert len(_drawn(one)) == 30
    assert Sample.objects.get(study=one).strata == Sample.objects.get(study=two).strata


@pytest.mark.django_db
def test_it_sets_aside_what_it_did_not_draw_and_records_the_sample(study):
    _conversations(study, _specs())
    sample = draw_sample(study, n=30, seed=7, min_turns=2)
    rows = Conversation.objects.filter(study=study)
    assert rows.in_set().count() == 30
    assert rows.filter(set_aside=SetAside.SAMPLE).count() == 90  # 70 not drawn + 20 of 1 turn
    assert not rows.in_set().filter(n_turns__lt=2).exists()
    stored = Sample.objects.get(study=study)
    assert (stored.population, stored.n, stored.seed, stored.min_turns) == (100, 30, 7, 2)
    assert (
        stored.methods
        == sample.methods
        == ("30 of 100 conversations with at least 2 turns, drawn at random with seed 7.")
    )
    assert sample.set_aside_short == 20


@pytest.mark.django_db
def test_its_strata_shares_hold_in_the_database(study):
    specs = _specs(300)
    _conversations(study, specs)
    sample = draw_sample(study, n=50, seed=11, stratify=["source", "language", "turns"])
    combos = {(fmt, language_of(lang), turns_bucket(t)) for _, _, t, fmt, lang in specs}
    assert len(sample.strata) == len(combos) == 9
    drawn = Conversation.objects.filter(study=study).in_set()
    for name, counts in sample.strata.items():
        assert abs(counts["drawn"] - 50 * counts["population"] / 300) < 1
        values = dict(part.split("=") for part in name.split(", "))
        matching = [
            c
            for c in drawn
            if c.source_format == values["source"]
            and language_of(c.metadata.get("language")) == values["language"]
            and turns_bucket(c.n_turns) == values["turns"]
        ]
        assert len(matching) == counts["drawn"], name
    assert sample.methods == (
        "50 of 300 conversations, drawn at random with seed 11, stratified by source "
        "format, language and number of turns (buckets 1, 2, 3-4, 5-9, 10+) with "
        "proportional allocation over 9 strata (largest remainder)."
    )


@pytest.mark.slow
@pytest.mark.django_db
def test_it_sizes_the_sample_and_says_so(study):
    _conversations(study, _specs(1000))
    sample = draw_sample(study, n=None, seed=7)
    assert sample.n == 278  # Krejcie and Morgan's 278 for 1,000
    assert sample.methods == (
        "278 of 1,000 conversations (95% confidence, ±5% margin, p = 0.5), drawn at random "
        "with seed 7."
    )
    with pytest.raises(SamplingRefused, match="--n 200 is below the 278 that 95% confidence"):
        draw_sample(study, n=200, seed=7, margin=0.05, replace=True)
    larger = draw_sample(study, n=300, seed=7, confidence=0.95, replace=True)
    assert larger.methods.startswith(
        "300 of 1,000 conversations (Cochran's formula gives 278 for 95% confidence"
    )


@pytest.mark.django_db
def test_it_replaces_a_sample_only_when_told_and_restores_the_set_first(study):
    _conversations(study, _specs())
    draw_sample(study, n=30, seed=7)
    with pytest.raises(SamplingRefused, match="already has a sample .30 of 120, seed 7"):
        draw_sample(study, n=20, seed=8)
    assert len(_drawn(study)) == 30
    again = draw_sample(study, n=40, seed=8, replace=True)
    assert again.population == 120  # the earlier set was restored before drawing
    assert len(_drawn(study)) == 40
    # and the same seed over the restored set draws what a first draw would
    other = make_study("other")
    _conversations(other, _specs())
    draw_sample(other, n=40, seed=8)
    assert _drawn(study) == _drawn(other)


@pytest.mark.django_db
def test_it_leaves_split_conversations_set_aside_on_replace(study):
    _conversations(study, _specs(20))
    Conversation.objects.filter(study=study, external_id="c001").update(set_aside=SetAside.SPLIT)
    draw_sample(study, n=5, seed=1)
    draw_sample(study, n=5, seed=2, replace=True)
    assert Conversation.objects.get(study=study, external_id="c001").set_aside == SetAside.SPLIT
    assert Sample.objects.filter(study=study).first().population == 19


@pytest.mark.django_db
def test_it_refuses_more_than_the_population_and_changes_nothing(study):
    _conversations(study, _specs(10))
    with pytest.raises(SamplingRefused, match="cannot draw 11 conversations: .* has 10"):
        draw_sample(study, n=11, seed=1)
    with pytest.raises(SamplingRefused, match="at least 2 turns\\) has 9"):
        draw_sample(study, n=10, seed=1, min_turns=2)
    assert len(_drawn(study)) == 10
    assert not Sample.objects.exists()


@pytest.mark.django_db
def test_it_refuses_when_conversations_are_assigned(study):
    _conversations(study, _specs(10))
    group = make_group(study, "G1")
    Conversation.objects.filter(external_id__in=["c002", "c005"]).assign(group)
    with pytest.raises(
        SamplingRefused, match=r"2 conversations .* assigned to groups \(c002, c005\)"
    ):
        draw_sample(study, n=3, seed=1)
    assert len(_drawn(study)) == 10


@pytest.mark.django_db
def test_a_failed_replace_restores_nothing(study, alice):
    _conversations(study, _specs(10))
    draw_sample(study, n=3, seed=1)
    group = make_group(study, "G1", annotators=[alice])
    drawn = Conversation.objects.filter(study=study).in_set()
    drawn.filter(external_id=drawn.first().external_id).assign(group)
    with pytest.raises(SamplingRefused, match="already assigned"):
        draw_sample(study, n=3, seed=2, replace=True)
    assert Conversation.objects.filter(study=study).in_set().count() == 3


@pytest.mark.django_db
def test_it_refuses_when_conversations_are_labelled(study, alice):
    group = make_group(study, "G1", annotators=[alice])
    conversation = make_conversation(study, "c1", group=group)
    label(conversation.turns.first(), alice)
    conversation.assignments.all().delete()  # labels left behind by an unassignment
    make_conversation(study, "c2")
    with pytest.raises(SamplingRefused, match="already have labels"):
        draw_sample(study, n=1, seed=1)


# -- manage.py sample -----------------------------------------------------------------------


@pytest.mark.django_db
def test_the_command_draws_and_prints_the_methods_and_strata(study):
    _conversations(study, _specs())
    out = StringIO()
    call_command(
        "sample", "s1", "--n", "30", "--seed", "7", "--stratify", "source",
        "--min-turns", "2", stdout=out,
    )  # fmt: skip
    lines = out.getvalue().splitlines()
    assert lines[0] == (
        "30 of 100 conversations with at least 2 turns, drawn at random with seed 7, "
        "stratified by source format with proportional allocation over 2 strata (largest "
        "remainder)."
    )
    assert lines[1:3] == ["  source=lmsys: 6 of 20", "  source=wildchat: 24 of 80"]
    assert lines[3] == (
        "Set aside 90 conversations (70 not drawn, 20 with fewer than 2 turns); they stay "
        "in the study as the population."
    )
    assert len(_drawn(study)) == 30


@pytest.mark.django_db
def test_the_command_sizes_with_auto(study):
    _conversations(study, _specs(100))
    out = StringIO()
    call_command("sample", "s1", "--n", "auto", "--seed", "7", stdout=out)
    assert out.getvalue().startswith("80 of 100 conversations (95% confidence, ±5% margin")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "args, message",
    [
        (["nope", "--n", "3", "--seed", "1"], "no study with slug 'nope'"),
        (["s1", "--n", "x", "--seed", "1"], "--n takes a whole number or 'auto', not 'x'"),
        (["s1", "--n", "30", "--seed", "1"], "cannot draw 30 conversations"),
        (["s1", "--n", "3", "--seed", "1", "--stratify", "size"], "cannot stratify by size"),
        (["s1", "--n", "3", "--seed", "1", "--min-turns", "0"], "--min-turns must be 1"),
        (["s1", "--n", "auto", "--seed", "1", "--margin", "2"], "margin must be between 0"),
    ],
)
def test_the_command_refuses_clearly(study, args, message):
    _conversations(study, _specs(20))
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("sample", *args)
    assert len(_drawn(study)) == 20


@pytest.mark.django_db
def test_the_command_refuses_a_second_sample_without_replace(study):
    _conversations(study, _specs(20))
    call_command("sample", "s1", "--n", "5", "--seed", "1", stdout=StringIO())
    with pytest.raises(CommandError, match="pass --replace to draw anew"):
        call_command("sample", "s1", "--n", "5", "--seed", "2")
    call_command("sample", "s1", "--n", "6", "--seed", "2", "--replace", stdout=StringIO())
    assert len(_drawn(study)) == 6
    assert Sample.objects.filter(study=study).count() == 2
