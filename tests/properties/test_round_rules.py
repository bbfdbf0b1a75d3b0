"""Property-based tests of the round rules (issue 7): a Hypothesis state machine plays random
studies (a group of 2 to 4 annotators, sometimes with the lead or another group's moderator
among them; a moderator; a lead; one or two short conversations) through random sequences of
round-1 labels and revisions, later-round labels, comments, moderator decisions and
proposals (proposed, accepted, mapped, rejected), each through the pages, the REST API or
import_annotations, and checks after every step:

- every current label is what its annotator last submitted there successfully;
- round-1 rows never change once the card has left round 1;
- a step changes nobody's labels but those of the annotator who submitted them;
- each card's state agrees with its labels; at most one current consensus per card and
  group, whose method says how it arose;
- no annotation, consensus, comment or proposal row ever disappears;
- the agreement job's loader, and the report's counts, equal the rows.

Refusals (409, 422, a rejected record) are outcomes, checked against what the rules say
should happen; a 500 fails.

Isolation: Hypothesis runs many examples inside one pytest test, and pytest-django's `db`
fixture gives that test one transaction. Each example opens a savepoint when it starts
(`transaction.atomic()` entered in `__init__`) and rolls it back in `teardown()`, which
Hypothesis calls even after a failure. That is what hypothesis.extra.django.TestCase does per
example, without a TransactionTestCase's flush of every table per example (slow, above all
on PostgreSQL), and it works inside a plain pytest function with pytest-django's fixtures.

Settings: `HYPOTHESIS_PROFILE=thorough` for a long local run; the default ("ci") is
derandomized, so CI runs the same examples every time. The profiles are applied to this
machine only, never loaded globally, so other Hypothesis tests keep their own settings."""

from __future__ import annotations

import json
import os
from collections import Counter
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from annotation.models import (
    CardState,
    CardStatus,
    Consensus,
    Kind,
    Method,
    Proposal,
    ProposalStatus,
)
from taxonomy.models import Taxonomy

from . import checks
from .world import OTHERS, Config, World, build_world, make_people

pytestmark = pytest.mark.django_db

PROFILES = {
    "ci": settings(
        max_examples=30,
        stateful_step_count=25,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    ),
    "thorough": settings(
        max_examples=400,
        stateful_step_count=40,
        deadline=None,
        # failures found are replayed first next time; var/ is not in git
        database=DirectoryBasedExampleDatabase("var/hypothesis"),
        suppress_health_check=[HealthCheck.too_slow],
    ),
}
# another name (a profile of another test's) runs the CI one here
PROFILE = PROFILES.get(os.environ.get("HYPOTHESIS_PROFILE", "ci"), PROFILES["ci"])

# few label sets, so that annotators agree often enough to reach every state
BASE_SETS = [(), ("code_rollback",), ("must_do_omission",), ("code_rollback", "must_do_omission")]
CHANNELS = ["page", "api", "import"]

MUST_HAPPEN = {
    *(f"round {r} via {channel}: done" for r in "1n" for channel in CHANNELS),
    "comment: done",
    "decide: done",
    "propose: done",
    *(f"{action} a proposal: done" for action in ("accept", "map", "reject")),
    "a card reached: escalated",
    *(f"a consensus: {method}" for method in Method.values),
}

configs = st.builds(
    Config,
    n_annotators=st.integers(1, 4),  # 1: a group of one, whose labels are its consensus
    lead_annotates=st.booleans(),
    mod_b_annotates=st.booleans(),
    kind=st.sampled_from([Kind.STUDENT, Kind.EXPERT]),
    turns_per_conversation=st.lists(st.integers(1, 2), min_size=1, max_size=2).map(tuple),
    discussion_rounds=st.integers(1, 2),
)


class RoundRules(RuleBasedStateMachine):
    """One example: a study built by `start`, then random steps. Bound to the test's people,
    preset taxonomy version and temporary folder by `machine_for`."""

    people: dict
    version: object
    tmp: object
    outcomes: Counter

    def __init__(self) -> None:
        super().__init__()
        self._example = transaction.atomic()
        self._example.__enter__()
        self.world: World | None = None
        # (turn, annotator, round) -> (codes, note): the last successful submit
        self.submitted: dict[tuple[int, int, int], checks.Labels] = {}
        self.frozen: dict[int, tuple] = {}
        self.seen: dict[str, set[int]] = {}
        self.label_sets = list(BASE_SETS)
        self.steps = 0
        self.rows: list[checks.Row] | None = None  # the rows after the last step, if known
        self.loaded: object = None  # the rows and version the loader was last checked on

    def saw(self, what: str) -> None:
        """Count an outcome, for Hypothesis's statistics and the test's coverage check."""
        event(what)
        self.outcomes[what] += 1

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self._example.__exit__(None, None, None)

    @initialize(config=configs)
    def start(self, config: Config) -> None:
        self.world = build_world(config, self.people, self.version, self.tmp)

    # -- what the rules say ---------------------------------------------------------------

    def state(self, turn) -> tuple[str, int]:
        # the card's state in its group (a card shared by groups has one in each)
        states = CardState.objects.filter(turn=turn, group=self.world.group)
        found = states.values_list("status", "round").first()
        return found or (CardStatus.OPEN, 1)

    def may_label(self, user, turn, round: int) -> bool:
        """Labels for `round` are accepted from an annotator of the card's group when the
        card is in that round: round 1 while open, the round under way while disputed."""
        status, under_way = self.state(turn)
        if user.pk not in self.world.annotator_ids or round != under_way:
            return False
        return status == (CardStatus.OPEN if round == 1 else CardStatus.DISPUTED)

    def sees_discussion(self, user, turn) -> bool:
        """The discussion is shown to the group's moderator and the leads, and to its
        annotators once round 1 is over for the card."""
        status, _ = self.state(turn)
        if user.pk in self.world.annotator_ids:
            return status != CardStatus.OPEN
        return user.username in ("lead", "moderator")

    def may_decide(self, user, turn) -> bool:
        status, _ = self.state(turn)
        decider = user.username in ("lead", "moderator") and user.pk not in self.world.annotator_ids
        undecided = not Consensus.objects.filter(turn=turn, is_current=True).exists()
        return decider and undecided and status in (CardStatus.DISPUTED, CardStatus.ESCALATED)

    def is_expert(self, user) -> bool:
        study = self.world.study()
        return (
            user.username == "lead"
            or study.memberships.filter(user=user, kind=Kind.EXPERT).exists()
        )

    # -- drawing --------------------------------------------------------------------------

    def draw_actor(self, data, *, favour: tuple[str, ...] = ()):
        """Anyone: the group's annotators, or those named in `favour`, three times as
        likely as the others (the moderator, the lead, mod-b, charlie)."""
        people, annotators = self.world.people, self.world.annotators
        others = [people[name] for name in OTHERS if people[name] not in annotators]
        likely = [people[name] for name in favour] if favour else annotators
        return data.draw(st.sampled_from(likely * 3 + annotators + others), label="who")

    def draw_turn(self, data, *, favour: tuple[str, ...] = ()):
        """Any card; those in a status of `favour` three times as likely."""
        turns = self.world.turns
        likely = [t for t in turns if self.state(t)[0] in favour]
        return data.draw(st.sampled_from(likely * 3 + turns), label="card")

    def draw_labels(self, data) -> tuple[tuple[str, ...], str]:
        codes = data.draw(st.sampled_from(self.label_sets), label="labels")
        note = data.draw(st.sampled_from(["", "same note", f"note {self.steps}"]), label="note")
        return codes, note

    # -- steps ----------------------------------------------------------------------------

    def step(self, kind: str, name: str, allowed, action) -> bool:
        """Run `action`; nobody's rows but `allowed`'s may change (None: nobody's). `kind`
        names the step in Hypothesis's statistics (--hypothesis-show-statistics)."""
        self.steps += 1
        before = checks.label_rows(self.world)
        done = action()
        after = checks.label_rows(self.world)
        checks.check_only_changed(before, after, allowed.pk if allowed else None, name)
        self.rows = after
        if not done:
            assert before == after, f"{name} was refused, yet labels changed"
        self.saw(f"{kind}: {'done' if done else 'refused'}")
        return done

    def submit(self, who, turn, codes: tuple[str, ...], note: str, round: int, channel: str):
        """Labels for `round` through one door; checks the outcome against the rules and
        remembers what was stored."""
        status, under_way = self.state(turn)
        expected, stale = self.may_label(who, turn, round), False
        if channel == "page" and round == 1:
            action = lambda: self.world.card_page(who, turn, codes, note)  # noqa: E731
        elif channel == "page":
            # the discussion page: an annotator who may not see it yet gets a 404
            expected = self.sees_discussion(who, turn) and self.may_label(who, turn, under_way)
            # a form shown for another round is refused (409) today; the discussion post is
            # being changed to ignore the client's round and save in the server's: either
            # keeps every rule, so both are accepted
            stale = round != under_way
            action = lambda: self.world.discussion_page(who, turn, codes, note, round)  # noqa: E731
        else:
            door = self.world.api_put if channel == "api" else self.world.import_one
            action = lambda: door(who, turn, codes, note, round)  # noqa: E731
        kind = f"round {'1' if round == 1 else 'n'} via {channel}"
        kind += " (stale form)" if stale else "" if round == under_way else " (not its round)"
        name = (
            f"round-{round} labels by {who} via {channel} on a {status} card in round {under_way}"
        )
        done = self.step(kind, name, who, action)
        assert done == expected or (stale and not done), f"{name}: done={done}"
        if done:
            # the server's round, never the form's
            self.submitted[(turn.pk, who.pk, under_way)] = (frozenset(codes), note)

    @rule(data=st.data())
    def label(self, data) -> None:
        """Anyone labels a card, mostly in the round under way, sometimes (a stale form, a
        confused script) in the one before or after."""
        who, turn = self.draw_actor(data), self.draw_turn(data)
        codes, note = self.draw_labels(data)
        channel = data.draw(st.sampled_from(CHANNELS), label="channel")
        _, under_way = self.state(turn)
        offset = data.draw(st.sampled_from([0, 0, 0, -1, 1]), label="round offset")
        self.submit(who, turn, codes, note, max(under_way + offset, 1), channel)

    @rule(data=st.data())
    def play_a_round(self, data) -> None:
        """Every annotator of the group labels a card in turn, in the round under way, each
        through any door, many of them choosing the same set: the card moves on."""
        turn = self.draw_turn(data)
        shared = data.draw(st.sampled_from(self.label_sets), label="shared labels")
        for who in data.draw(st.permutations(self.world.annotators), label="order"):
            codes, note = self.draw_labels(data)
            if data.draw(st.sampled_from([True, True, False]), label="agrees"):
                codes = shared
            channel = data.draw(st.sampled_from(CHANNELS), label="channel")
            self.submit(who, turn, codes, note, self.state(turn)[1], channel)

    @rule(data=st.data())
    def comment(self, data) -> None:
        who = self.draw_actor(data, favour=("moderator", "lead"))
        turn = self.draw_turn(data, favour=(CardStatus.DISPUTED, CardStatus.ESCALATED))
        status, _ = self.state(turn)
        open_thread = status in (CardStatus.DISPUTED, CardStatus.ESCALATED)
        expected = self.sees_discussion(who, turn) and open_thread
        text = f"comment {self.steps} by {who}"
        done = self.step(
            "comment", f"comment by {who}", None, lambda: self.world.comment(who, turn, text)
        )
        assert done == expected, f"comment by {who} on a {status} card: done={done}"

    @rule(data=st.data())
    def decide(self, data) -> None:
        """A consensus decided on the discussion page, by whoever tries."""
        who = self.draw_actor(data, favour=("moderator", "lead"))
        turn = self.draw_turn(data, favour=(CardStatus.ESCALATED, CardStatus.DISPUTED))
        codes = data.draw(st.sampled_from(self.label_sets), label="consensus")
        rationale = data.draw(st.sampled_from(["because", "it fits", ""]), label="rationale")
        status, _ = self.state(turn)
        expected = self.may_decide(who, turn) and bool(rationale)
        done = self.step(
            "decide",
            f"decision by {who}",
            None,
            lambda: self.world.decide(who, turn, codes, rationale),
        )
        assert done == expected, f"decision by {who} on a {status} card: done={done}"
        if done:
            consensus = Consensus.objects.get(turn=turn, is_current=True)
            assert (consensus.decided_by_id, consensus.codes) == (who.pk, frozenset(codes))

    @rule(data=st.data())
    def propose(self, data) -> None:
        who, turn = self.draw_actor(data), self.draw_turn(data)
        reason = data.draw(st.sampled_from(["none fits", ""]), label="reason")
        name = f"Proposed {self.steps}"
        expected = who.pk in self.world.annotator_ids and bool(reason)
        done = self.step(
            "propose",
            f"proposal by {who}",
            None,
            lambda: self.world.propose(who, turn, name, reason),
        )
        assert done == expected, f"proposal by {who}: done={done}"
        if done and data.draw(st.sampled_from([True, True, False]), label="decided at once"):
            self.decide_a_proposal(data, self._proposals().last())

    @precondition(lambda self: self.world is not None and self._proposals().exists())
    @rule(data=st.data())
    def decide_proposal(self, data) -> None:
        """Accept, map or reject a proposal (pending or already decided), by whoever tries."""
        proposals = list(self._proposals())
        pending = [p for p in proposals if p.status == ProposalStatus.PENDING]
        self.decide_a_proposal(data, data.draw(st.sampled_from(pending * 3 + proposals)))

    def decide_a_proposal(self, data, proposal: Proposal) -> None:
        who = self.draw_actor(data, favour=("lead", "moderator", "mod-b"))
        action = data.draw(st.sampled_from(["accept", "map", "reject"]), label="action")
        value = {
            "accept": st.sampled_from(["", "User Intent Quality", "no such category"]),
            "map": st.sampled_from(["code_rollback", "must_do_omission", "no_such_code"]),
            "reject": st.sampled_from(["out of scope", "", "duplicate"]),
        }[action]
        value = data.draw(value, label="value")
        valid = {
            "accept": value != "no such category",
            "map": value in ("code_rollback", "must_do_omission"),
            "reject": bool(value),
        }[action]
        pending = proposal.status == ProposalStatus.PENDING
        expected = self.is_expert(who) and pending and valid
        before = self.state(proposal.turn)
        done = self.step(
            f"{action} a proposal",
            f"{action} of a proposal by {who}",
            None,
            lambda: self.world.decide_proposal(who, proposal.pk, action, value),
        )
        assert done == expected, f"{action} ({value!r}) by {who}: done={done}"
        if done and action == "accept":
            self._accepted(proposal, before)

    def _proposals(self):
        return Proposal.objects.filter(study_id=self.world.study_id).order_by("pk")

    def _accepted(self, proposal: Proposal, before: tuple[str, int]) -> None:
        """An accepted type joins the labels to choose from; a card past round 1 goes back
        to its annotators for one more round, its consensus no longer current."""
        proposal.refresh_from_db()
        self.label_sets.append((proposal.new_code,))
        status, round = before
        if status != CardStatus.OPEN:
            assert self.state(proposal.turn) == (CardStatus.DISPUTED, round + 1)

    @rule()
    def compute_agreement(self) -> None:
        """The lead's report (`manage.py agreement SLUG --json`) counts what the rows hold."""
        out = StringIO()
        call_command("agreement", self.world.slug, "--json", "--bootstrap", "0", stdout=out)
        for axis in json.loads(out.getvalue())["axes"].values():
            checks.check_report_counts(self.world, checks.label_rows(self.world), axis["report"])

    # -- after every step -----------------------------------------------------------------

    @invariant()
    def rules_hold(self) -> None:
        if self.world is None:
            return
        rows = self.rows if self.rows is not None else checks.label_rows(self.world)
        self.rows = None
        for state in checks.states_of(self.world).values():
            self.saw(f"a card reached: {state.status}")
        for method in Consensus.objects.filter(group=self.world.group).values_list("method"):
            self.saw(f"a consensus: {method[0]}")
        checks.check_labels_as_submitted(rows, self.submitted)
        checks.check_round1_frozen(self.world, rows, self.frozen)
        checks.check_states_and_consensus(self.world, rows)
        checks.check_nothing_deleted(self.world, self.seen)
        # the loader reads labels and the taxonomy version: check it again when they changed
        version = self.world.study().taxonomy_version_id
        if self.loaded != (rows, version):
            for round in {1} | {r.round for r in rows}:
                checks.check_loader(self.world, rows, round)
            self.loaded = (rows, version)


@pytest.fixture
def preset_version(db):
    return Taxonomy.load_preset("interaction-smells")


def test_it_keeps_the_round_rules_whatever_happens(preset_version, tmp_path):
    class Machine(RoundRules):
        people = make_people()
        version = preset_version
        tmp = tmp_path
        outcomes = Counter()

    run_state_machine_as_test(Machine, settings=PROFILE)
    # rules that held only because nothing happened prove nothing: every door and every
    # state was reached at least once
    missing = sorted(MUST_HAPPEN - set(Machine.outcomes))
    assert not missing, f"never happened: {missing}; outcomes: {dict(Machine.outcomes)}"
