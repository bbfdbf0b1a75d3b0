"""The study a state machine plays in, and the three doors every action goes through: the
pages (Django's test client posting the real forms), the REST API and import_annotations.

The study has two groups: A, whose conversations are all the cards, and B. With an overlap
(Config.overlap) B has 2 to 4 annotators of its own and shares conversation c1 with A;
seats and assignments go through Group.seat and Conversation.objects.assign, so the world
itself obeys the cross-group seat rule (nobody labels in one group and sits in another
sharing a conversation). World.assigned is the machine's model of the assignments (an import
naming B on a card of A's adds to it); the discussion doors take the `?group=` of the
group whose discussion they post to.

Each door answers with whether the action was done: True for success, False for a refusal
(400, 403, 404, 409, 422, or a rejected import record). Anything else (a 500 raises in the
test client; a redirect to the login page means a test bug) fails the test on the spot."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

from django.conf import settings
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.importers.annotations import import_annotations
from annotation.models import Conversation, Group, Kind, Role, Seat, Study, Turn
from taxonomy.models import TaxonomyVersion
from tests.factories import make_user

REFUSED = {400, 403, 404, 409, 422}
# group A's pool of annotators, and group B's: nobody sits in both
BASE_ANNOTATORS = ("alice", "bob", "carol", "dave")
B_ANNOTATORS = ("charlie", "erin", "frank", "grace")
# lead: leads the study; moderator: group A's; mod-b: group B's, an expert who may also
# annotate in group A when the groups share no conversation (Group.check_seat)
OTHERS = ("lead", "moderator", "mod-b")
SHARED = "c1"  # the calibration conversation, assigned to both groups in an overlap


def make_people() -> dict[str, object]:
    """Everyone who may act, created once per test (users are not per example)."""
    return {name: make_user(name) for name in (*BASE_ANNOTATORS, *B_ANNOTATORS, *OTHERS)}


@dataclass(frozen=True)
class Config:
    """What one example's study looks like."""

    n_annotators: int  # group A's size, 1 to 4, the extras below included
    lead_annotates: bool
    mod_b_annotates: bool  # never with an overlap: mod-b would sit in both groups
    kind: str  # group A's kind: its annotators are experts (decide proposals) or not
    turns_per_conversation: tuple[int, ...]  # one or two conversations
    discussion_rounds: int
    # an overlap: group B has 2 to 4 annotators of its own (charlie, erin, ...) and shares
    # conversation c1 with group A; otherwise charlie alone, on no card of A's (until an
    # import names group B on one: the importer assigns it, Group.check_seat permitting)
    overlap: bool = False
    n_b_annotators: int = 1
    b_kind: str = Kind.STUDENT


@dataclass
class Seats:
    """One group as the machine knows it: who moderates it and who labels in it."""

    group: Group
    moderator: object
    annotators: list

    @property
    def ids(self) -> set[int]:
        return {u.pk for u in self.annotators}

    @property
    def seated_ids(self) -> set[int]:
        return self.ids | {self.moderator.pk}


@dataclass
class World:
    study_id: int
    slug: str
    groups: dict[str, Seats]  # "A" (its conversations are every card), "B"
    people: dict[str, object]
    turns: list[Turn]
    tmp: Path
    # the machine's model of the assignments: conversation id -> names of its groups
    assigned: dict[int, set[str]]
    discussion_rounds: int
    clients: dict[str, Client] = field(default_factory=dict)
    api_clients: dict[str, APIClient] = field(default_factory=dict)
    _files: count = field(default_factory=count)

    @property
    def annotators(self) -> list:
        """Everyone who labels, in any group."""
        return [u for seats in self.groups.values() for u in seats.annotators]

    def labels_in(self, user) -> str | None:
        """The group in which `user` labels (one at most in these studies)."""
        found = [name for name, seats in self.groups.items() if user.pk in seats.ids]
        assert len(found) <= 1, f"{user} labels in groups {found}"
        return found[0] if found else None

    def groups_of(self, turn: Turn) -> list[str]:
        return sorted(self.assigned[turn.conversation_id])

    def group_of(self, user, turn: Turn) -> str | None:
        """The group in which `user` labels `turn`, if its conversation is assigned to it."""
        name = self.labels_in(user)
        return name if name in self.assigned[turn.conversation_id] else None

    def turns_of(self, name: str) -> list[Turn]:
        return [t for t in self.turns if name in self.assigned[t.conversation_id]]

    def may_share(self, name: str, other: str) -> bool:
        """check_groups_can_share: nobody labels in one group and sits in the other."""
        a, b = self.groups[name], self.groups[other]
        return not (a.ids & b.seated_ids or b.ids & a.seated_ids)

    def study(self) -> Study:
        # always fresh: an accepted proposal switches the study to a new taxonomy version
        return Study.objects.select_related("taxonomy_version").get(pk=self.study_id)

    def client(self, user) -> Client:
        if user.username not in self.clients:
            client = Client()
            client.force_login(user)
            self.clients[user.username] = client
        return self.clients[user.username]

    def api(self, user) -> APIClient:
        if user.username not in self.api_clients:
            client = APIClient()
            client.force_authenticate(user)
            self.api_clients[user.username] = client
        return self.api_clients[user.username]

    def url(self, name: str, *args, group: str | None = None) -> str:
        """A page's address; `group` names one of the groups sharing a card (?group=ID)."""
        url = reverse(name, args=[self.slug, *args])
        return f"{url}?group={self.groups[group].group.pk}" if group else url

    # -- labels ---------------------------------------------------------------------------

    def card_page(self, user, turn: Turn, codes: tuple[str, ...], note: str) -> bool:
        """Round 1 on the card page (/s/SLUG/cards/ID/)."""
        response = self.client(user).post(self.url("card", turn.pk), _labels(codes, note=note))
        return _done(response, 302)

    def discussion_page(
        self, user, turn: Turn, codes: tuple[str, ...], note: str, round: int, group=None
    ) -> bool:
        """A later round on the discussion page; the form carries the round it was shown for."""
        data = _labels(codes, note=note, round=str(round))
        response = self.client(user).post(self.url("discussion", turn.pk, group=group), data)
        return _done(response, 302)

    def api_put(self, user, turn: Turn, codes: tuple[str, ...], note: str, round: int) -> bool:
        body = {"labels": list(codes), "note": note, "round": round}
        response = self.api(user).put(
            f"/api/studies/{self.slug}/cards/{turn.pk}/annotation/", body, format="json"
        )
        return _done(response, 200)

    def import_one(
        self, user, turn: Turn, codes: tuple[str, ...], note: str, round: int, group: str
    ) -> bool:
        """One record through import_annotations, as `manage.py import_annotations` runs it;
        the record names `group` (the importer assigns the conversation to it if need be)."""
        record = {
            "conversation": turn.conversation.external_id,
            "turn": turn.index,
            "annotator": user.username,
            "labels": list(codes),
            "round": round,
            "group": group,
            "note": note,
        }
        path = self.tmp / f"labels-{next(self._files)}.jsonl"
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
        report = import_annotations(self.study(), path)
        assert report.imported + len(report.rejected) == 1, report.summary()
        return report.imported == 1

    # -- discussion and decisions ---------------------------------------------------------

    def comment(self, user, turn: Turn, text: str, group=None) -> bool:
        url = self.url("comment", turn.pk, group=group)
        return _done(self.client(user).post(url, {"text": text}), 302)

    def decide(self, user, turn: Turn, codes: tuple[str, ...], rationale: str, group=None) -> bool:
        data = _labels(codes, rationale=rationale)
        url = self.url("decide", turn.pk, group=group)
        return _done(self.client(user).post(url, data), 302)

    def propose(self, user, turn: Turn, name: str, reason: str) -> bool:
        data = {"name": name, "definition": f"what {name} means", "reason": reason}
        return _done(self.client(user).post(self.url("propose", turn.pk), data), 302)

    def decide_proposal(self, user, proposal_id: int, action: str, value: str) -> bool:
        """accept (value: category or ""), map (value: type code) or reject (value: reason)."""
        data = {"action": action, "confirm": "1"}  # accept: past its confirmation
        data[{"accept": "category", "map": "code", "reject": "reason"}[action]] = value
        response = self.client(user).post(self.url("proposal_decide", proposal_id), data)
        return _done(response, 302)


def build_world(
    config: Config, people: dict[str, object], version: TaxonomyVersion, tmp: Path
) -> World:
    """Group A (the cards) and group B (mod-b moderates it; charlie annotates it, with erin,
    frank and grace in an overlap, when it shares conversation c1 with A), seated through
    Group.seat and assigned through Conversation.objects.assign, the rules the groups page
    and the importer use (each raises SeatConflict on someone sitting in both groups)."""
    study = Study.objects.create(
        slug="props",
        name="Properties",
        taxonomy_version=version,
        discussion_rounds=config.discussion_rounds,
    )
    study.add_member(people["lead"], Role.LEAD, Kind.EXPERT)
    group_a = Group.objects.create(study=study, name="A", kind=config.kind)
    group_b = Group.objects.create(study=study, name="B", kind=config.b_kind)
    group_b.seat(people["mod-b"], Seat.MODERATOR)
    b_annotators = [people[name] for name in B_ANNOTATORS[: config.n_b_annotators]]
    for user in b_annotators:
        group_b.seat(user, Seat.ANNOTATOR)
    group_a.seat(people["moderator"], Seat.MODERATOR)
    extras = [people["lead"]] if config.lead_annotates else []
    extras += [people["mod-b"]] if config.mod_b_annotates else []
    n_base = max(config.n_annotators - len(extras), 0)
    annotators = [people[name] for name in BASE_ANNOTATORS[:n_base]] + extras
    for user in annotators:
        group_a.seat(user, Seat.ANNOTATOR)
    turns, assigned = [], {}
    for i, n_turns in enumerate(config.turns_per_conversation, start=1):
        conversation = Conversation.objects.create(
            study=study, external_id=f"c{i}", source_format="native", n_turns=n_turns
        )
        shared = config.overlap and conversation.external_id == SHARED
        assigned[conversation.pk] = {"A", "B"} if shared else {"A"}
        for group in (group_a, group_b) if shared else (group_a,):
            Conversation.objects.filter(pk=conversation.pk).assign(group)
        turns += [
            Turn.objects.create(
                conversation=conversation,
                index=index,
                user_text=f"c{i}: write function {index}",
                reply_text=f"def f{index}(x):\n    return x * {index}",
            )
            for index in range(1, n_turns + 1)
        ]
    groups = {
        "A": Seats(group_a, people["moderator"], annotators),
        "B": Seats(group_b, people["mod-b"], b_annotators),
    }
    rounds = config.discussion_rounds
    return World(study.pk, study.slug, groups, people, turns, tmp, assigned, rounds)


def _labels(codes: tuple[str, ...], **fields: str) -> dict:
    """The labels form: some types, or "no smell" for the empty set."""
    data: dict = {"types": list(codes)} if codes else {"no_smell": "1"}
    data.update(fields)
    return data


def _done(response, success: int) -> bool:
    if response.status_code == success:
        if success == 302:
            login = reverse(settings.LOGIN_URL)
            assert not response.url.startswith(login), "the test client was not logged in"
        return True
    assert response.status_code in REFUSED, (
        f"{response.request['REQUEST_METHOD']} {response.request['PATH_INFO']}: "
        f"HTTP {response.status_code}, expected {success} or a refusal {sorted(REFUSED)}"
    )
    return False
