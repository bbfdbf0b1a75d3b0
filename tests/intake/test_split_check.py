"""The split-check study over boundaries (issue 10, point 3; `--unit boundaries` since issue
20): a seeded sample of a study's split points, one card each showing the original beside
its two parts; the `create_split_check` command and the lead's page; the accuracy ("Right
split" share) of the agreement job and report. The check over entries, the default, is
tests/intake/test_split_check_entries.py's.

Split parts are made here with the ORM (`split`), as a split would leave them: the original
set aside as split, each part a conversation of its own copied turns with `split_from` and
`split_first_turn` set; nothing here depends on annotation/intake/splitting.py."""

from __future__ import annotations

import csv
import io
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score

from annotation.agreement import data as agreement_data
from annotation.agreement.splitcheck import accuracy
from annotation.intake import splitcheck
from annotation.intake.splitcheck import RIGHT_SPLIT, SplitCheckError, create_split_check
from annotation.intake.splitcheck import boundaries as points_check
from annotation.intake.splitcheck.boundaries import split_points
from annotation.models import (
    Conversation,
    Job,
    JobKind,
    JobStatus,
    Kind,
    Role,
    Sample,
    SetAside,
    Study,
    Turn,
)
from tests.factories import (
    PASSWORD,
    label,
    make_conversation,
    make_group,
    make_study,
    make_user,
)

pytestmark = pytest.mark.django_db

CODES = ["right_split", "split_too_early", "split_too_late", "should_not_split"]


def split(original: Conversation, *starts: int) -> list[Conversation]:
    """Split `original` before each turn of `starts` (as a split would): parts with their own
    copies of the turns, the original set aside as split."""
    bounds = [1, *starts, original.n_turns + 1]
    turns = {t.index: t for t in original.turns.all()}
    parts = []
    for i, (first, end) in enumerate(zip(bounds, bounds[1:], strict=False), 1):
        part = Conversation.objects.create(
            study=original.study,
            external_id=f"{original.external_id}/part{i}",
            source_format=original.source_format,
            n_turns=end - first,
            split_from=original,
            split_first_turn=first,
        )
        Turn.objects.bulk_create(
            Turn(
                conversation=part,
                index=k - first + 1,
                user_text=turns[k].user_text,
                reply_text=turns[k].reply_text,
                reply_parts=turns[k].reply_parts,
            )
            for k in range(first, end)
        )
        parts.append(part)
    Conversation.objects.filter(pk=original.pk).update(set_aside=SetAside.SPLIT)
    return parts


def make_source(slug: str = "src", order: list[str] | None = None) -> Study:
    """A study with four split conversations (six split points) and one unsplit one,
    created in `order` (their external ids), so the database ids follow it."""
    study = make_study(slug)
    plan = {"a": (5, [3]), "b": (6, [2, 4]), "c": (4, [2]), "d": (7, [3, 5])}
    for ext in order or sorted(plan):
        n, starts = plan[ext]
        split(make_conversation(study, ext, n_turns=n), *starts)
    make_conversation(study, "whole", n_turns=3)
    return study


def drawn(study: Study) -> list[tuple[str, int]]:
    """(original external id, boundary) of each card of a split-check study, in card order."""
    rows = (
        Conversation.objects.filter(study=study).order_by("id").values_list("metadata", flat=True)
    )
    return [
        (m["split_check"]["original_external_id"], m["split_check"]["before_turn"]) for m in rows
    ]


# -- the split points and the draw -----------------------------------------------------------


def test_it_finds_one_split_point_per_boundary_between_consecutive_parts():
    source = make_source()
    points = [(p.original_external_id, p.before_turn) for p in split_points(source)]
    assert points == [("a", 3), ("b", 2), ("b", 4), ("c", 2), ("d", 3), ("d", 5)]
    b_second = next(
        p for p in split_points(source) if (p.original_external_id, p.before_turn) == ("b", 4)
    )
    assert [(p.index, p.first_turn, p.last_turn) for p in b_second.parts] == [(2, 2, 3), (3, 4, 6)]


def test_it_ignores_an_original_that_is_not_set_aside_as_split():
    source = make_source()
    assert points_check.count_split_points(source) == 6
    Conversation.objects.filter(study=source, external_id="a").update(set_aside=SetAside.NO)
    assert ("a", 3) not in [(p.original_external_id, p.before_turn) for p in split_points(source)]
    assert points_check.count_split_points(source) == len(split_points(source)) == 5


def test_the_same_seed_draws_the_same_split_points_whatever_the_database_ids():
    one = make_source("one", order=["a", "b", "c", "d"])
    two = make_source("two", order=["d", "c", "b", "a"])  # other ids, reversed
    for seed in range(5):
        first = create_split_check(one, f"one-{seed}", n=3, seed=seed, unit="boundaries")
        second = create_split_check(two, f"two-{seed}", n=3, seed=seed, unit="boundaries")
        assert drawn(first) == drawn(second)
        assert drawn(first) == sorted(drawn(first))  # stable order: by original, then boundary
    assert len({tuple(drawn(Study.objects.get(slug=f"one-{s}"))) for s in range(5)}) > 1


def _point(ext: str, before: int, original_id: int) -> points_check.SplitPoint:
    part = points_check.Part(0, f"{ext}/p", 1, before - 1, 1)
    after = points_check.Part(0, f"{ext}/q", before, 2, 2)
    return points_check.SplitPoint(original_id, ext, before + 1, before, (part, after), ("", 0, ""))


@settings(max_examples=100, deadline=None)
@given(
    keys=st.lists(
        st.tuples(st.sampled_from("abcdef"), st.integers(2, 9)),
        min_size=1,
        max_size=30,
        unique=True,
    ),
    ids=st.randoms(use_true_random=False),
    seed=st.integers(0, 2**32),
    data=st.data(),
)
def test_the_draw_depends_on_the_points_never_on_their_ids(keys, ids, seed, data):
    n = data.draw(st.integers(1, len(keys)))
    numbers = list(range(1, len(keys) + 1))
    draws = []
    for _ in range(2):
        ids.shuffle(numbers)  # other database ids, other insertion order
        points = [_point(ext, before, pk) for (ext, before), pk in zip(keys, numbers, strict=True)]
        ids.shuffle(points)
        points.sort(key=points_check.SplitPoint.sort_key)
        draws.append(
            [
                (p.original_external_id, p.before_turn)
                for p in points_check.draw_points(points, n, seed)
            ]
        )
    assert draws[0] == draws[1]
    assert len(draws[0]) == n and len(set(draws[0])) == n and set(draws[0]) <= set(keys)
    assert draws[0] == sorted(draws[0])


def test_it_refuses_more_split_points_than_there_are_and_writes_nothing():
    source = make_source()
    with pytest.raises(SplitCheckError, match="asked for 7 split points, the source study has 6"):
        create_split_check(source, "check", n=7, seed=1, unit="boundaries")
    with pytest.raises(SplitCheckError, match="at least 1"):
        create_split_check(source, "check", n=0, seed=1, unit="boundaries")
    assert not Study.objects.filter(slug="check").exists()


def test_it_refuses_a_taken_or_invalid_slug():
    source = make_source()
    with pytest.raises(SplitCheckError, match="already exists"):
        create_split_check(source, "src", n=1, seed=1, unit="boundaries")
    with pytest.raises(SplitCheckError, match="not a valid slug"):
        create_split_check(source, "no spaces", n=1, seed=1, unit="boundaries")


# -- the new study --------------------------------------------------------------------------


def test_it_makes_one_card_per_drawn_split_point_with_what_it_checks():
    source = make_source()
    lead, expert = make_user("lead"), make_user("expert")
    source.add_member(lead, Role.LEAD, Kind.EXPERT)
    source.add_member(expert, Role.ANNOTATOR, Kind.EXPERT)
    study = create_split_check(source, "check", n=6, seed=7, name="Check", unit="boundaries")

    assert study.name == "Check"
    assert study.taxonomy_version.taxonomy.slug == "split-check"
    axis = study.taxonomy_version.axes.get()
    assert not axis.multi_select
    assert [t.code for t in study.taxonomy_version.type_list()] == CODES
    assert list(study.memberships.values_list("user__username", "role")) == [("lead", Role.LEAD)]

    conversations = list(Conversation.objects.filter(study=study).order_by("id"))
    assert len(conversations) == 6
    assert all(c.n_turns == 1 and c.turns.count() == 1 for c in conversations)
    b4 = next(c for c in conversations if c.metadata["split_check"]["before_turn"] == 4)
    original = Conversation.objects.get(study=source, external_id="b")
    part2, part3 = original.split_parts.order_by("split_first_turn")[1:]
    assert b4.metadata == {
        "split_check": {
            "study": "src",
            "original_id": original.pk,
            "original_external_id": "b",
            "original_n_turns": 6,
            "before_turn": 4,
            "parts": [
                {"id": part2.pk, "external_id": "b/part2", "index": 2, "first_turn": 2,
                 "last_turn": 3, "n_turns": 2},
                {"id": part3.pk, "external_id": "b/part3", "index": 3, "first_turn": 4,
                 "last_turn": 6, "n_turns": 3},
            ],
        }
    }  # fmt: skip
    assert "split of b before turn 4" in b4.turns.get().user_text
    sample = Sample.objects.get(study=study)
    assert (sample.population, sample.n, sample.seed) == (6, 6, 7)
    assert "6 of its 6 split points, drawn with seed 7" in sample.methods


# -- the card --------------------------------------------------------------------------------


def _one_card_study(source_turns: int = 6, starts=(2, 4), before: int = 4):
    source = make_study("src")
    original = make_conversation(source, "b", n_turns=source_turns)
    Turn.objects.filter(conversation=original, index=before).update(
        user_text="Now **something else**: <script>alert(1)</script>"
    )
    split(original, *starts)
    seed = next(
        s
        for s in range(100)
        if drawn_point(source, s) == before  # the seed that draws the boundary wanted
    )
    study = create_split_check(source, "check", n=1, seed=seed, unit="boundaries")
    alice = make_user("alice")
    group = make_group(study, "G", [alice])
    Conversation.objects.filter(study=study).assign(group)
    return study, alice, Turn.objects.get(conversation__study=study)


def drawn_point(source: Study, seed: int) -> int:
    return points_check.draw_points(split_points(source), 1, seed)[0].before_turn


def test_the_card_shows_the_original_with_the_boundary_beside_the_two_parts(client):
    study, alice, turn = _one_card_study()
    client.login(username="alice", password=PASSWORD)
    html = client.get(reverse("card", args=[study.slug, turn.pk])).text

    original_side, parts_side = html.split('class="split-parts"', 1)
    # the original: all six turns, the boundary right before turn 4, turn 1 outside both parts
    assert original_side.count('<p class="turn-mark">Turn ') == 6
    before, after = original_side.split('id="split-boundary"', 1)
    assert "Turn 3 of 6" in before and "Turn 4 of 6" not in before
    assert "Turn 4 of 6 · part 3" in after
    assert 'class="split-turn side-outside"' in before  # turn 1: part 1, not checked here
    assert "Split here: part 3 starts at turn 4" in html
    # the two parts: part 2 (turns 2-3) and part 3 (turns 4-6), each with its own turns
    assert "Part 2: b/part2 (turns 2–3 of the original)" in parts_side
    assert "Part 3: b/part3 (turns 4–6 of the original)" in parts_side
    assert "Turn 1 of 3 (original turn 4)" in parts_side
    assert "Turn 2 of 2 (original turn 3)" in parts_side
    # the text goes through the safe Markdown rendering, on both sides
    assert html.count("<strong>something else</strong>") == 2
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    # each side takes the keyboard's focus (it scrolls on its own) and says what it is
    assert (
        html.count('class="split-side split-') == 3
        and html.count('tabindex="0" aria-labelledby') == 3
    )
    assert '<a href="#split-boundary">Go to the split</a>' in html
    # the labels form is the split-check preset's, one key each
    assert 'value="right_split"' in html and 'value="should_not_split"' in html


def test_the_card_says_when_a_part_is_gone():
    study, alice, turn = _one_card_study()
    meta = turn.conversation.metadata["split_check"]
    Conversation.objects.filter(pk=meta["parts"][1]["id"]).delete()
    ctx = splitcheck.card_context(Conversation.objects.get(pk=turn.conversation_id))
    gone = ctx["split_check"]["parts"][1]
    assert gone["conversation"] is None and gone["turns"] == []
    assert len(ctx["split_check"]["original_turns"]) == 6


def test_a_card_of_another_study_has_no_split_check_context(study):
    conversation = make_conversation(study, "plain")
    assert splitcheck.card_context(conversation) == {}


def test_the_discussion_page_shows_the_split_side_by_side_too(client):
    study, alice, turn = _one_card_study()
    bob = make_user("bob")
    group = study.groups.get()
    study.add_member(bob, Role.ANNOTATOR)
    group.annotators.add(bob)
    label(turn, alice, "right_split")
    label(turn, bob, "split_too_early")  # disputed: the discussion opens
    client.login(username="alice", password=PASSWORD)
    html = client.get(reverse("discussion", args=[study.slug, turn.pk])).text
    assert 'id="split-boundary"' in html and "Part 3: b/part3" in html


# -- accuracy --------------------------------------------------------------------------------


def test_accuracy_on_a_hand_made_case():
    right, early, late, never = (frozenset({c}) for c in CODES)
    result = accuracy(
        [right, right, early, right, frozenset()],
        {"bob": [right, late, never], "alice": [right, right], "judge": []},
        judges=["judge"],
    )
    assert result["consensus"] == {"n_cards": 5, "n_right": 3, "accuracy": 0.6}
    assert result["annotators"]["alice"] == {
        "n_cards": 2,
        "n_right": 2,
        "accuracy": 1.0,
        "judge": False,
    }
    assert result["annotators"]["bob"]["accuracy"] == pytest.approx(1 / 3)
    assert result["annotators"]["judge"]["accuracy"] is None
    assert result["annotators"]["judge"]["judge"] is True
    assert list(result["annotators"]) == ["alice", "bob", "judge"]
    empty = accuracy([], {})
    assert empty["consensus"]["accuracy"] is None
    assert "no card has a consensus" in empty["consensus"]["accuracy_reason"]


label_sets = st.lists(st.frozensets(st.sampled_from(CODES), max_size=2), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(consensus=label_sets, alice=label_sets)
def test_accuracy_equals_sklearn_accuracy_score(consensus, alice):
    result = accuracy(consensus, {"alice": alice})

    def expected(sets):
        y_pred = ["|".join(sorted(s)) for s in sets]
        return accuracy_score([RIGHT_SPLIT] * len(sets), y_pred)

    assert result["consensus"]["accuracy"] == pytest.approx(expected(consensus), abs=1e-12)
    assert result["annotators"]["alice"]["accuracy"] == pytest.approx(expected(alice), abs=1e-12)


def _labelled_check(n_cards: int = 4):
    """A split-check study of `n_cards` cards, two annotators in one group, labelled:
    alice right on every card, bob right on the first two only; consensus where they agree."""
    source = make_study("src")
    for i in range(n_cards):
        split(make_conversation(source, f"c{i}", n_turns=4), 3)
    study = create_split_check(source, "check", n=n_cards, seed=1, unit="boundaries")
    alice, bob, lead = make_user("alice"), make_user("bob"), make_user("lead")
    study.add_member(lead, Role.LEAD, Kind.EXPERT)
    group = make_group(study, "G", [alice, bob])
    Conversation.objects.filter(study=study).assign(group)
    for i, turn in enumerate(Turn.objects.filter(conversation__study=study).order_by("id")):
        label(turn, alice, RIGHT_SPLIT)
        label(turn, bob, RIGHT_SPLIT if i < 2 else "split_too_late")
    return study, lead


def test_the_agreement_job_adds_the_accuracy_to_a_split_check_study():
    study, _ = _labelled_check()
    result = agreement_data.compute_study_report(study, n_boot=20)
    check = result["axes"]["split"]["split_check"]
    # the consensus exists on the two cards where both said "right split" (the others are
    # disputed): both right
    assert check["consensus"] == {"n_cards": 2, "n_right": 2, "accuracy": 1.0}
    assert check["annotators"]["alice"]["accuracy"] == 1.0
    assert check["annotators"]["bob"]["accuracy"] == 0.5
    assert result["axes"]["split"]["report"]["pairs"]  # kappa as for any study


def test_other_studies_get_no_accuracy(study):
    result = agreement_data.compute_study_report(study, n_boot=20)
    assert all("split_check" not in axis for axis in result["axes"].values())


def test_the_report_page_and_its_csv_show_the_accuracy(client):
    study, lead = _labelled_check()
    result = agreement_data.compute_study_report(study, n_boot=20)
    Job.objects.create(
        study=study,
        kind=JobKind.AGREEMENT,
        status=JobStatus.DONE,
        result=result,
        finished_at=timezone.now(),
    )
    client.login(username="lead", password=PASSWORD)
    html = client.get(reverse("report", args=[study.slug])).text
    assert "Split check: accuracy" in html
    table = html.split('data-table="split-check"', 1)[1].split("</table>", 1)[0]
    assert '<th scope="row">Consensus</th>' in table and "100.00%" in table
    assert '<th scope="row">bob</th>' in table and "50.00%" in table
    body = client.get(reverse("report_download", args=[study.slug, "csv"])).text
    rows = [r for r in csv.DictReader(io.StringIO(body)) if r["scope"] == "split_check"]
    bob = {r["statistic"]: r["value"] for r in rows if r["name"] == "bob"}
    assert bob == {"n_cards": "4", "n_right": "2", "accuracy": "0.5"}
    markdown = client.get(reverse("report_download", args=[study.slug, "md"])).text
    assert "Split check: accuracy" in markdown


# -- the command -----------------------------------------------------------------------------


def test_the_command_makes_the_study_and_says_what_it_drew():
    source = make_source()
    lead = make_user("lead")
    source.add_member(lead, Role.LEAD, Kind.EXPERT)
    out = StringIO()
    call_command(
        "create_split_check",
        "src",
        "check",
        "--unit",
        "boundaries",
        "--n",
        "4",
        "--seed",
        "3",
        stdout=out,
    )
    study = Study.objects.get(slug="check")
    assert Conversation.objects.filter(study=study).count() == 4
    assert "4 of its 6 split points, drawn with seed 3" in out.getvalue()
    assert study.role_of(lead) == Role.LEAD
    again = create_split_check(source, "again", n=4, seed=3, unit="boundaries")
    assert drawn(again) == drawn(study)


def test_the_command_names_what_is_wrong():
    make_source()
    with pytest.raises(CommandError, match="unknown study 'nope'"):
        call_command("create_split_check", "nope", "check", "--n", "1", "--seed", "1")
    with pytest.raises(CommandError, match="the source study has 6"):
        call_command(
            "create_split_check", "src", "check", "--unit", "boundaries", "--n", "10", "--seed", "1"
        )
    assert not Study.objects.filter(slug="check").exists()


# -- the lead's page -------------------------------------------------------------------------


@pytest.fixture
def page_setup(client):
    source = make_source()
    lead, alice = make_user("lead"), make_user("alice")
    make_user("charlie")
    source.add_member(lead, Role.LEAD, Kind.EXPERT)
    source.add_member(alice, Role.ANNOTATOR)
    return source


def test_the_study_page_offers_the_split_check_to_its_lead(client, page_setup):
    client.login(username="lead", password=PASSWORD)
    html = client.get(reverse("study", args=["src"])).text
    assert reverse("lead_split_check", args=["src"]) in html


def test_the_lead_makes_a_split_check_study_from_the_page(client, page_setup):
    client.login(username="lead", password=PASSWORD)
    url = reverse("lead_split_check", args=["src"])
    page = client.get(url)
    assert page.status_code == 200 and "<strong>6</strong> split points" in page.text
    response = client.post(
        url, {"unit": "boundaries", "slug": "check", "name": "", "n": 5, "seed": 2}
    )
    assert response.status_code == 302 and response["Location"] == reverse("study", args=["check"])
    study = Study.objects.get(slug="check")
    assert Conversation.objects.filter(study=study).count() == 5
    assert study.role_of(make_user("lead")) == Role.LEAD
    assert drawn(study) == drawn(
        create_split_check(page_setup, "same", n=5, seed=2, unit="boundaries")
    )


def test_the_page_says_what_is_wrong_and_writes_nothing(client, page_setup):
    client.login(username="lead", password=PASSWORD)
    url = reverse("lead_split_check", args=["src"])
    response = client.post(url, {"unit": "boundaries", "slug": "check", "n": 60, "seed": 2})
    assert response.status_code == 422
    assert "asked for 60 split points, the source study has 6" in response.text
    response = client.post(url, {"unit": "boundaries", "slug": "check", "n": "", "seed": 2})
    assert (
        response.status_code == 422 and "How many to draw: This field is required" in response.text
    )
    assert not Study.objects.filter(slug="check").exists()


@pytest.mark.parametrize(("username", "status"), [("alice", 403), ("charlie", 404)])
def test_only_the_lead_reaches_the_split_check_page(client, page_setup, username, status):
    client.login(username=username, password=PASSWORD)
    url = reverse("lead_split_check", args=["src"])
    get = client.get(url)
    assert get.status_code == status
    if status == 403:
        assert "Leads only" in get.text
    post = client.post(url, {"slug": "check", "n": 1, "seed": 1})
    assert post.status_code == status
    assert not Study.objects.filter(slug="check").exists()


def test_the_agreement_command_prints_the_accuracy():
    study, _ = _labelled_check()
    out = StringIO()
    call_command("agreement", study.slug, "--bootstrap", "20", stdout=out)
    text = out.getvalue()
    assert "Split check: accuracy" in text
    assert "bob: 4 split points, 2 right, accuracy 50.00%" in text
