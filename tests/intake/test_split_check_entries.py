"""The split check over entries (issue 20, point 1), the default of `create_split_check`: it
draws from every entry the splitting left (the parts of a split conversation, a conversation
offered and left whole as itself), a card shows the entry beside its original with the
entry's turns marked, and the agreement job reports the entry accuracy with Wilson's interval
and kappa on correct / incorrect beside the full one.

The source study has a known truth and goes through the real splitter: a split job asks a
stub model (the fake endpoint of tests/model_stub.py), the lead applies every open proposal (splitting.split).
Topics: a, b and c change topic once and are split right there; w changes topic but the model
leaves it whole (wrong: should have been split); x is one topic the model splits (wrong: its
first part ends too early, its second starts too late); s is one topic left whole; `one` has
one turn (the job skips it: left whole); `never` is never offered to the splitter."""

from __future__ import annotations

import csv
import io
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from annotation.agreement import data as agreement_data
from annotation.agreement.splitcheck import entry_accuracy
from annotation.agreement.stats import wilson_interval
from annotation.intake import splitcheck
from annotation.intake.sampling import sample_size
from annotation.intake.splitcheck import SplitCheckError, create_split_check
from annotation.intake.splitcheck import entries as entry_check
from annotation.intake.splitting import split
from annotation.models import (
    Conversation,
    Job,
    JobKind,
    JobStatus,
    Kind,
    Role,
    Sample,
    SetAside,
    SplitProposal,
    Study,
    Turn,
)
from annotation.tasks import run_split_proposals
from tests.factories import PASSWORD, label, make_conversation, make_group, make_study, make_user
from tests.report.helpers import named

pytestmark = pytest.mark.django_db

CODES = [
    "correct",
    "should_have_been_split",
    "starts_too_late",
    "ends_too_early",
    "mixes_topics",
    "other",
]
# external id -> (turns, where the topic really changes, where the model splits); None: the
# conversation is not offered to the splitter
PLAN = {
    "a": (6, [4], [4]),
    "b": (5, [3], [3]),
    "c": (4, [3], [3]),
    "w": (6, [4], []),
    "x": (4, [], [3]),
    "s": (3, [], []),
    "one": (1, [], []),
    "never": (5, [2], None),
}
# each entry's true judgement
TRUTH = {
    "a#1": "correct",
    "a#2": "correct",
    "b#1": "correct",
    "b#2": "correct",
    "c#1": "correct",
    "c#2": "correct",
    "w": "should_have_been_split",
    "x#1": "ends_too_early",
    "x#2": "starts_too_late",
    "s": "correct",
    "one": "correct",
}


@pytest.fixture
def stub_model(fake_model):
    """The configured model (tests/model_stub.py's fake endpoint) answers each
    conversation's split points from PLAN."""

    def answer(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        name = prompt.split("[conversation ", 1)[1].split("]", 1)[0]
        points = PLAN[name][2]
        splits = [{"before_turn": k, "reason": "new topic"} for k in points]
        return json.dumps({"splits": splits, "drop_turns": []})

    fake_model.answer = answer
    return fake_model


def make_source(slug: str = "src", order: list[str] | None = None, lead=None) -> Study:
    """The study of known truth (see the module's doc), its conversations created in `order`
    (so the database ids follow it), split as the splitter and the lead would."""
    study = make_study(slug)
    if lead is not None:
        study.add_member(lead, Role.LEAD, Kind.EXPERT)
    offered = []
    for name in order or list(PLAN):
        n_turns, topics, points = PLAN[name]
        conversation = make_conversation(study, name, n_turns=n_turns)
        for turn in Turn.objects.filter(conversation=conversation):
            topic = sum(1 for k in topics if turn.index >= k)
            Turn.objects.filter(pk=turn.pk).update(
                user_text=f"[conversation {name}] topic {name}{topic}: step {turn.index}"
            )
        if points is not None:
            offered.append(conversation.pk)
    job = Job.objects.create(study=study, kind=JobKind.SPLIT, params={"conversations": offered})
    run_split_proposals.apply(args=[job.pk])
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    for conversation in Conversation.objects.filter(study=study, split_proposals__status="open"):
        points = conversation.split_proposals.filter(status="open").values_list(
            "turn_index", flat=True
        )
        split(conversation, list(points))
    return study


def drawn(study: Study) -> list[str]:
    """The entries a split-check study's cards check, in card order."""
    rows = (
        Conversation.objects.filter(study=study).order_by("id").values_list("metadata", flat=True)
    )
    return [m["split_check"]["entry_external_id"] for m in rows]


# -- the population and the draw --------------------------------------------------------------


def counted(study):
    """The population listed (entry_check.population), after checking that its counts are
    what the database counts without listing it (population_counts: the form and the
    methods text)."""
    found = entry_check.population(study)
    counts = entry_check.population_counts(study)
    assert (counts.n_split, counts.n_parts, counts.n_whole) == (
        found.n_split,
        found.n_parts,
        found.n_whole,
    )
    assert counts.n_entries == len(found)
    return found


def test_the_population_is_every_entry_the_splitting_left(stub_model):
    source = make_source()
    found = counted(source)

    assert sorted(e.external_id for e in found.entries) == sorted(TRUTH)
    assert (found.n_split, found.n_parts, found.n_whole) == (4, 8, 3)
    assert splitcheck.count_units(source) == len(found) == 11
    w = next(e for e in found.entries if e.external_id == "w")
    assert (w.whole, w.first_turn, w.last_turn, w.n_parts) == (True, 1, 6, 1)
    x2 = next(e for e in found.entries if e.external_id == "x#2")
    assert (x2.whole, x2.part, x2.n_parts, x2.first_turn, x2.last_turn) == (False, 2, 2, 3, 4)
    assert x2.original_external_id == "x" and x2.original_n_turns == 4


def test_a_study_wide_splitting_run_makes_every_conversation_it_read_an_entry(stub_model):
    """split_conversations over the whole study names no conversation in its job: each one
    it read, left whole or not, is still an entry (it marks them, split_considered_by)."""
    from django.core.management import call_command

    study = make_study("wide")
    for name in ("w", "s", "a"):
        n_turns, topics, _ = PLAN[name]
        conversation = make_conversation(study, name, n_turns=n_turns)
        for turn in Turn.objects.filter(conversation=conversation):
            Turn.objects.filter(pk=turn.pk).update(user_text=f"[conversation {name}] {turn.index}")
    call_command("split_conversations", "wide", "--apply", stdout=io.StringIO())
    found = counted(study)
    assert found.n_whole == 2  # w (wrongly) and s, left whole, are entries: they can be drawn
    assert sorted(e.external_id for e in found.entries if e.whole) == ["s", "w"]
    assert found.n_split == 1 and found.n_parts == PLAN["a"][2].__len__() + 1


def test_a_conversation_nobody_offered_to_the_splitter_is_no_entry(stub_model):
    source = make_source()
    never = Conversation.objects.get(study=source, external_id="never")
    assert never.pk not in {e.id for e in counted(source).entries}
    # a proposal (the lead's point, dismissed) means it was looked at: left whole, an entry
    SplitProposal.objects.create(
        conversation=never, turn_index=2, source="lead", status="dismissed"
    )
    assert "never" in {e.external_id for e in counted(source).entries}


def test_an_entry_stays_one_when_a_sample_sets_it_aside_and_an_undone_split_gives_back_the_whole(
    stub_model,
):
    source = make_source()
    Conversation.objects.filter(study=source, external_id__in=["a#1", "s"]).update(
        set_aside=SetAside.SAMPLE
    )
    assert len(counted(source)) == 11
    from annotation.intake.splitting import unsplit

    unsplit(Conversation.objects.get(study=source, external_id="x"))
    names = {e.external_id for e in counted(source).entries}
    assert "x" in names and "x#1" not in names and len(names) == 10


def test_the_check_draws_the_conversation_wrongly_left_whole(stub_model):
    source = make_source()
    lead = make_user("lead")
    source.add_member(lead, Role.LEAD, Kind.EXPERT)
    out = StringIO()
    call_command("create_split_check", "src", "check", "--n", "auto", "--seed", "5", stdout=out)
    study = Study.objects.get(slug="check")

    sample = Sample.objects.get(study=study)
    assert sample.population == 11  # the entries, not the 4 split points
    assert sample.n == sample_size(11) == len(drawn(study))
    assert (sample.confidence, sample.margin) == (0.95, 0.05)
    assert "w" in drawn(study)
    assert study.taxonomy_version.taxonomy.slug == "split-check-entries"
    text = out.getvalue()
    assert (
        "11 of its 11 entries (the 8 parts of 4 split conversations and 3 conversations left whole)"
        in text
    )
    assert "Cochran's sample size with the finite population correction for 95% confidence" in text
    assert study.role_of(lead) == Role.LEAD
    # a smaller draw can hold it too: never the case when only split points were drawn
    picks = [drawn(create_split_check(source, f"c{s}", n=3, seed=s)) for s in range(30)]
    assert any("w" in p for p in picks) and any("one" in p for p in picks)
    assert all(len(p) == 3 and set(p) <= set(TRUTH) for p in picks)


def test_the_same_seed_draws_the_same_entries_whatever_the_database_ids(stub_model):
    one = make_source("one")
    two = make_source("two", order=list(reversed(PLAN)))
    for seed in range(6):
        first = create_split_check(one, f"one-{seed}", n=4, seed=seed)
        second = create_split_check(two, f"two-{seed}", n=4, seed=seed)
        assert drawn(first) == drawn(second)
    assert len({tuple(drawn(Study.objects.get(slug=f"one-{s}"))) for s in range(6)}) > 1
    # the stable order: by the original, then the entry's place in it
    assert drawn(create_split_check(one, "all", n=11, seed=0)) == [
        "a#1", "a#2", "b#1", "b#2", "c#1", "c#2", "one", "s", "w", "x#1", "x#2",
    ]  # fmt: skip


def _entry(name: str, first: int, pk: int, original_id: int) -> entry_check.Entry:
    return entry_check.Entry(pk, f"{name}#{first}", 1, first, first, 9, original_id, name, 9,
                             ("f.jsonl", 0, ""))  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(
    keys=st.lists(
        st.tuples(st.sampled_from("abcdef"), st.integers(1, 9)),
        min_size=1,
        max_size=30,
        unique=True,
    ),
    shuffler=st.randoms(use_true_random=False),
    seed=st.integers(0, 2**32),
    data=st.data(),
)
def test_the_draw_depends_on_the_entries_never_on_their_ids(keys, shuffler, seed, data):
    n = data.draw(st.integers(1, len(keys)))
    draws = []
    for _ in range(2):
        ids = list(range(1, len(keys) + 1))
        shuffler.shuffle(ids)  # other database ids for the entries and their originals
        originals = {name: 100 + i for i, name in enumerate(shuffler.sample("abcdef", 6))}
        units = [_entry(name, first, pk, originals[name]) for (name, first), pk in zip(keys, ids, strict=True)]  # fmt: skip
        shuffler.shuffle(units)
        units.sort(key=entry_check.Entry.sort_key)
        picked = entry_check.draw(units, n, seed, "entries", "")
        draws.append([(e.original_external_id, e.first_turn) for e in picked])
    assert draws[0] == draws[1]
    assert len(draws[0]) == n and len(set(draws[0])) == n and draws[0] == sorted(draws[0])


def test_it_refuses_what_it_cannot_draw_and_writes_nothing(stub_model):
    source = make_source()
    with pytest.raises(SplitCheckError, match="asked for 12 entries, the source study has 11"):
        create_split_check(source, "check", n=12, seed=1)
    empty = make_study("empty")
    make_conversation(empty, "lonely", n_turns=4)  # never offered
    with pytest.raises(SplitCheckError, match="no conversation of it was offered to the splitter"):
        create_split_check(empty, "check", n=None, seed=1)
    with pytest.raises(SplitCheckError, match="margin must be between 0 and 1"):
        create_split_check(source, "check", n=None, seed=1, margin=5)
    assert not Study.objects.filter(slug="check").exists()


def test_the_command_names_what_is_wrong(stub_model):
    make_source()
    with pytest.raises(CommandError, match="--n takes a whole number or 'auto', not 'many'"):
        call_command("create_split_check", "src", "check", "--n", "many", "--seed", "1")
    with pytest.raises(CommandError, match="size the draw of --n auto only"):
        call_command(
            "create_split_check", "src", "check", "--n", "3", "--seed", "1", "--margin", "0.1"
        )
    with pytest.raises(CommandError, match="invalid choice: 'turns'"):
        call_command(
            "create_split_check", "src", "check", "--unit", "turns", "--n", "3", "--seed", "1"
        )
    with pytest.raises(CommandError, match="the source study has 11"):
        call_command("create_split_check", "src", "check", "--n", "40", "--seed", "1")
    assert not Study.objects.filter(slug="check").exists()


def test_auto_sizes_the_draw_with_the_confidence_and_margin_given(stub_model):
    source = make_source()
    call_command(
        "create_split_check", "src", "check", "--n", "auto", "--seed", "1",
        "--confidence", "0.9", "--margin", "0.2", stdout=StringIO(),
    )  # fmt: skip
    sample = Sample.objects.get(study__slug="check")
    assert sample.n == sample_size(11, 0.9, 0.2) == len(drawn(Study.objects.get(slug="check")))
    assert sample.n < 11 and (sample.confidence, sample.margin) == (0.9, 0.2)
    # boundaries stay available, with the same sizing
    call_command(
        "create_split_check", "src", "points", "--unit", "boundaries", "--n", "auto", "--seed", "1",
        stdout=StringIO(),
    )  # fmt: skip
    points = Sample.objects.get(study__slug="points")
    assert points.population == 4 == splitcheck.count_units(source, "boundaries")
    assert Study.objects.get(slug="points").taxonomy_version.taxonomy.slug == "split-check"


def test_the_command_says_when_the_splitting_is_not_finished(stub_model):
    source = make_source()
    s = Conversation.objects.get(study=source, external_id="s")
    SplitProposal.objects.create(conversation=s, turn_index=2, source="llm")
    out = StringIO()
    call_command("create_split_check", "src", "check", "--n", "2", "--seed", "1", stdout=out)
    assert "1 conversation left whole still have open split proposals" in out.getvalue()


def test_the_preset_asks_the_studys_question_pick_one():
    source = make_study("src")
    make_conversation(source, "c", n_turns=2)
    Job.objects.create(
        study=source, kind=JobKind.SPLIT, status=JobStatus.DONE,
        params={"conversations": list(Conversation.objects.values_list("pk", flat=True))},
    )  # fmt: skip
    study = create_split_check(source, "check", n=1, seed=0)
    axis = study.taxonomy_version.axes.get()
    assert axis.code == "entry" and not axis.multi_select
    types = study.taxonomy_version.type_list()
    assert [t.code for t in types] == CODES
    assert [t.hotkey for t in types] == ["1", "2", "3", "4", "5", "6"]
    assert all(t.definition for t in types)


# -- the card --------------------------------------------------------------------------------


def _check_of(source: Study) -> tuple[Study, dict[str, Turn]]:
    """A split-check study of every entry, alice and bob in its group; its cards by entry."""
    study = create_split_check(source, "check", n=11, seed=0)
    alice, bob = make_user("alice"), make_user("bob")
    group = make_group(study, "G", [alice, bob])
    Conversation.objects.filter(study=study).assign(group)
    turns = {t.conversation.external_id: t for t in Turn.objects.filter(conversation__study=study).select_related("conversation")}  # fmt: skip
    return study, turns


def test_the_card_shows_a_part_beside_its_original_with_its_turns_marked(client, stub_model):
    source = make_source()
    bold = "Now **bold move**: <script>alert(1)</script>"
    for name, index in (("x", 3), ("x#2", 1)):  # one turn, on both sides
        Turn.objects.filter(conversation__external_id=name, index=index).update(reply_text=bold)
    study, turns = _check_of(source)
    client.login(username="alice", password=PASSWORD)
    html = client.get(reverse("card", args=[study.slug, turns["x#2"].pk])).text

    assert "Is this entry one self-contained topic?" in html
    assert "is part 2 of 2 of <strong>x</strong>: turns 3–4 of 4" in html
    original, entry = html.split('class="split-side split-entry"', 1)
    # the original: its four turns, the entry's two marked, the mark where it starts
    assert original.count('<p class="turn-mark">Turn ') == 4
    before, after = original.split('id="entry-start"', 1)
    assert "Turn 2 of 4 · part 1" in before and "The entry starts: turn 3" in after
    assert after.count('class="split-turn side-entry"') == 2
    assert (
        "Turn 3 of 4 · <strong>the entry&#x27;s</strong>" in after
        or "Turn 3 of 4 · <strong>the entry's</strong>" in after
    )
    assert before.count('class="split-turn side-outside"') == 2
    # the entry: its own turns, numbered in the original too
    assert "Entry: x#2 (part 2, turns 3–4 of the original)" in entry
    assert "Turn 1 of 2 (original turn 3)" in entry and "Turn 2 of 2 (original turn 4)" in entry
    assert "topic x0: step 4" in entry and "topic x0: step 2" not in entry
    # safe Markdown on both sides; each side reachable with Tab
    assert html.count("<strong>bold move</strong>") == 2 and "<script>alert(1)" not in html
    assert html.count('tabindex="0" aria-labelledby') == 2
    assert '<a href="#entry-start">Go to the entry</a>' in html
    assert 'value="correct"' in html and 'value="mixes_topics"' in html


def test_the_card_of_an_entry_left_whole_is_the_whole_original_every_turn_marked(
    client, stub_model
):
    study, turns = _check_of(make_source())
    client.login(username="alice", password=PASSWORD)
    html = client.get(reverse("card", args=[study.slug, turns["w"].pk])).text

    assert "as the splitter left it, whole: all 6 turns" in html
    assert "Entry = original, left whole: w (6 turns)" in html
    assert html.count('class="split-turn side-entry"') == 6 and "side-outside" not in html
    assert "split-sides split-sides-whole" in html
    assert 'class="split-side split-entry"' not in html  # not shown twice
    assert "topic w0: step 1" in html and "topic w1: step 6" in html


def test_the_card_says_when_the_entry_is_gone():
    source = make_study("src")
    original = make_conversation(source, "c", n_turns=4)
    Job.objects.create(study=source, kind=JobKind.SPLIT, status=JobStatus.DONE,
                       params={"conversations": [original.pk]})  # fmt: skip
    split(original, [3])
    study = create_split_check(source, "check", n=2, seed=0)
    card = Conversation.objects.filter(study=study).order_by("id").last()
    from annotation.intake.splitting import unsplit

    unsplit(original)
    ctx = splitcheck.card_context(card)["split_check"]
    assert ctx["entry"] is None and ctx["entry_turns"] == []
    assert len(ctx["original_turns"]) == 4 and all(t.part is None for t in ctx["original_turns"])


def test_the_discussion_page_shows_the_entry_beside_its_original(client, stub_model):
    study, turns = _check_of(make_source())
    turn = turns["x#1"]
    label(turn, make_user("alice"), "ends_too_early")
    label(turn, make_user("bob"), "correct")  # disputed: the discussion opens
    client.login(username="alice", password=PASSWORD)
    html = client.get(reverse("discussion", args=[study.slug, turn.pk])).text
    assert 'id="entry-start"' in html and "Entry: x#1 (part 1, turns 1–2 of the original)" in html


# -- the measures ----------------------------------------------------------------------------

# bob's judgements where they differ from the truth
BOB = {"w": "correct", "a#2": "mixes_topics", "x#1": "starts_too_late"}


def _labelled(source: Study) -> Study:
    """Every entry checked: alice gives the truth, bob the truth but for BOB."""
    study, turns = _check_of(source)
    alice, bob = make_user("alice"), make_user("bob")
    for name, turn in turns.items():
        label(turn, alice, TRUTH[name])
        label(turn, bob, BOB.get(name, TRUTH[name]))
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD, Kind.EXPERT)
    return study


def _wilson(count: int, n: int) -> list[float]:
    low, high = proportion_confint(count, n, alpha=0.05, method="wilson")
    return [float(low), float(high)]


def test_the_agreement_job_reports_the_entry_accuracy_with_wilsons_interval(stub_model):
    study = _labelled(make_source())
    check = agreement_data.compute_study_report(study, n_boot=50)["axes"]["entry"]["split_check"]

    # the consensus: the 8 cards where both gave the same label (7 correct, x#2 not)
    assert check["consensus"]["n_cards"] == 8 and check["consensus"]["n_correct"] == 7
    assert check["entry_accuracy"] == check["consensus"]["entry_accuracy"] == 7 / 8
    assert check["entry_accuracy_ci"] == pytest.approx(_wilson(7, 8), abs=1e-9)
    alice, bob = check["annotators"]["alice"], check["annotators"]["bob"]
    assert (alice["n_cards"], alice["n_correct"], bob["n_correct"]) == (11, 8, 8)
    assert alice["entry_accuracy"] == pytest.approx(8 / 11)
    assert alice["entry_accuracy_ci"] == pytest.approx(_wilson(8, 11), abs=1e-9)
    assert bob["entry_accuracy_ci"] == pytest.approx(_wilson(8, 11), abs=1e-9)
    assert (check["unit"], check["correct"], check["interval"]) == ("entries", "correct", "wilson")


def test_kappa_on_correct_or_incorrect_sits_beside_the_full_kappa_as_sklearn_gives_them(stub_model):
    study = _labelled(make_source())
    result = agreement_data.compute_study_report(study, n_boot=50)["axes"]["entry"]
    names = sorted(TRUTH)
    alice = [TRUTH[n] for n in names]
    bob = [BOB.get(n, TRUTH[n]) for n in names]
    binary = cohen_kappa_score([a == "correct" for a in alice], [b == "correct" for b in bob])
    full = cohen_kappa_score(alice, bob)

    pair = named(result["split_check"]["binary"]["pairs"])["alice|bob"]
    assert pair["cohen_kappa"] == pytest.approx(binary, abs=1e-9)
    assert pair["cohen_kappa_full"] == pytest.approx(full, abs=1e-9)
    assert pair["cohen_kappa_full"] == named(result["report"]["pairs"])["alice|bob"]["cohen_kappa"]
    assert pair["n_common_cards"] == 11 and len(pair["cohen_kappa_ci"]) == 2
    assert pair["percent_agreement"] == pytest.approx(9 / 11)  # w and a#2 differ
    group = result["split_check"]["binary"]["groups"]["G"]
    assert group["cohen_kappa"] == pytest.approx(binary, abs=1e-9)
    assert result["split_check"]["binary"]["group_mean"]["cohen_kappa_full"] == pytest.approx(full)


label_sets = st.lists(st.frozensets(st.sampled_from(CODES), max_size=2), max_size=40)


@settings(max_examples=200, deadline=None)
@given(consensus=label_sets, alice=label_sets)
def test_entry_accuracy_and_its_interval_equal_statsmodels(consensus, alice):
    result = entry_accuracy(consensus, {"alice": alice})
    for sets, got in ((consensus, result["consensus"]), (alice, result["annotators"]["alice"])):
        k = sum(1 for s in sets if s == frozenset({"correct"}))
        if not sets:
            assert got["entry_accuracy"] is None and got["entry_accuracy_ci"] is None
            assert got["entry_accuracy_reason"].startswith("undefined:")
            continue
        assert got["entry_accuracy"] == pytest.approx(k / len(sets), abs=1e-12)
        assert got["entry_accuracy_ci"] == pytest.approx(_wilson(k, len(sets)), abs=1e-9)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 5000), data=st.data(), confidence=st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_wilsons_interval_equals_statsmodels(n, data, confidence):
    k = data.draw(st.integers(0, n))
    low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    assert wilson_interval(k, n, confidence) == pytest.approx([low, high], abs=1e-9)
    assert wilson_interval(0, 0) is None


def test_the_report_page_its_downloads_and_the_command_show_the_entry_accuracy(client, stub_model):
    study = _labelled(make_source())
    result = agreement_data.compute_study_report(study, n_boot=50)
    Job.objects.create(study=study, kind=JobKind.AGREEMENT, status=JobStatus.DONE, result=result,
                       finished_at=timezone.now())  # fmt: skip
    low, high = _wilson(7, 8)
    client.login(username="lead", password=PASSWORD)
    html = client.get(reverse("report", args=[study.slug])).text

    table = html.split('data-table="split-check-entries"', 1)[1].split("</table>", 1)[0]
    assert "Split check: entry accuracy" in html
    assert '<th scope="row">Consensus</th>' in table and "87.50%" in table
    assert f"[{low:.3f}, {high:.3f}]" in table
    kappa = html.split('data-table="split-check-kappa"', 1)[1].split("</table>", 1)[0]
    pair = named(result["axes"]["entry"]["split_check"]["binary"]["pairs"])["alice|bob"]
    assert f"{pair['cohen_kappa']:.3f}" in kappa and f"{pair['cohen_kappa_full']:.3f}" in kappa

    body = client.get(reverse("report_download", args=[study.slug, "csv"])).text
    rows = [r for r in csv.DictReader(io.StringIO(body)) if r["scope"] == "split_check"]
    consensus = {r["statistic"]: r for r in rows if r["name"] == "consensus"}
    assert float(consensus["entry_accuracy"]["value"]) == 0.875
    assert float(consensus["entry_accuracy"]["ci_low"]) == pytest.approx(low, abs=1e-9)
    assert float(consensus["entry_accuracy"]["ci_high"]) == pytest.approx(high, abs=1e-9)
    kappa_rows = [r for r in csv.DictReader(io.StringIO(body)) if r["scope"] == "split_check_kappa"]
    assert {r["name"] for r in kappa_rows} == {"G", "all pairs", "alice|bob"}
    payload = json.loads(client.get(reverse("report_download", args=[study.slug, "json"])).text)
    assert payload["axes"]["entry"]["split_check"]["entry_accuracy"] == 0.875
    markdown = client.get(reverse("report_download", args=[study.slug, "md"])).text
    assert "Split check: entry accuracy" in markdown and "11 of its 11 entries" in markdown

    out = StringIO()
    call_command("agreement", study.slug, "--bootstrap", "20", stdout=out)
    assert (
        f"Consensus: 8 entries, 7 correct, entry accuracy 87.50%, 95% CI [{low:.3f}, {high:.3f}]"
        in out.getvalue()
    )


# -- the lead's page -------------------------------------------------------------------------


def test_the_leads_page_counts_the_entries_and_makes_an_entry_check_by_default(client, stub_model):
    lead = make_user("lead")
    source = make_source(lead=lead)
    client.login(username="lead", password=PASSWORD)
    url = reverse("lead_split_check", args=["src"])
    page = client.get(url).text
    assert "<strong>11</strong> entries and <strong>4</strong> split points" in page
    assert f'name="n" value="{sample_size(11)}"' in page
    response = client.post(url, {"unit": "entries", "slug": "check", "n": 4, "seed": 2})
    assert response.status_code == 302
    study = Study.objects.get(slug="check")
    assert drawn(study) == drawn(create_split_check(source, "same", n=4, seed=2))
    assert study.role_of(lead) == Role.LEAD


def test_an_entry_with_a_dropped_turn_spans_the_original_without_it(stub_model):
    """A part the splitting made leaving out an off-topic turn (issue 20, point 3): the entry
    ends where its last turn is in the original, and the card marks the dropped turn as
    nobody's."""
    study = make_study("drops")
    original = make_conversation(study, "d", n_turns=5)
    split(original, [4], drop_turns=[2])  # parts: turns 1, 3 | 4-5; turn 2 left out
    found = entry_check.population(study)
    first = next(e for e in found.entries if e.part == 1)
    assert (first.first_turn, first.n_turns, first.last_turn) == (1, 2, 3)
    shown = entry_check.card_context({**first.as_metadata(study), "study": study.slug})
    marks = {
        t.index: (t.in_entry, t.part is not None) for t in shown["split_check"]["original_turns"]
    }
    assert marks[2] == (False, False) and marks[1] == marks[3] == (True, True)
    assert [t.original_index for t in shown["split_check"]["entry_turns"]] == [1, 3]


def test_a_conversation_a_split_job_named_is_an_entry_left_whole(stub_model):
    """Named by a split job that started (its `conversations`), with no proposal: the model
    was asked and left it whole. A queued job asked nothing yet."""
    source = make_source()
    never = Conversation.objects.get(study=source, external_id="never")
    Job.objects.create(
        study=source,
        kind=JobKind.SPLIT,
        status=JobStatus.QUEUED,
        params={"conversations": [never.pk]},
    )
    assert "never" not in {e.external_id for e in counted(source).entries}
    Job.objects.create(
        study=source,
        kind=JobKind.SPLIT,
        status=JobStatus.DONE,
        params={"conversations": [never.pk]},
    )
    assert "never" in {e.external_id for e in counted(source).entries if e.whole}
