"""The access matrices' study (tests/api/test_access_matrix.py for the API,
tests/access/test_page_matrix.py for the pages, partials and downloads): one user of each
role, one secret of each annotator (labels, note, evidence, time on the card), finished
agreement and export jobs, and what each role may see of each secret. The matrices read
every answer's body (a download's file too) for every (role, author) pair, not only its
status.

g1: alice and bob, moderated by `mod`, on c1: card 1 disputed (alice's secret), card 2
agreed; then lena, a lead, joins g1, and bob and lena label card 3, which stays in round 1
(alice has not labelled it): bob's and lena's secrets there are blind for alice and for
each other. g2: dora alone on c2, whose card 1 left round 1 with her label. `stranger`
leads another study."""

from __future__ import annotations

from dataclasses import dataclass

from django.test import Client

from annotation.models import CardTime, Job, JobKind, Proposal, Role, Study
from annotation.tasks import run_agreement, run_export
from tests.access.probe import body_of, is_file, shows_agreement
from tests.factories import (
    ROLLBACK,
    label,
    make_conversation,
    make_group,
    make_study,
    make_user,
    token_client,
)

ROLES = (
    "anonymous",
    "annotator",
    "other_group",
    "moderator",
    "lead",
    "lead_annotating",
    "other_study",
)


@dataclass(frozen=True)
class Secret:
    """One annotator's blind work on one card, each part unique in the study, and the roles
    that may see it (the author, and whoever may see the card's round-1 labels)."""

    author: str
    card: str  # "t1", "t3", "u1"
    code: str
    note: str
    evidence: str
    time_ms: int
    seen_by: frozenset[str]

    @property
    def time_shown(self) -> str:
        return f"{self.time_ms / 1000:.1f} s"  # as time per card shows it

    def parts_in(self, body: str, kind: str, codes_listed: bool = False) -> set[str]:
        """Which parts of the secret `body` shows: a label as the page renders it
        (data-code=...), as the API's JSON quotes it, or as a file writes it; none of the
        codes where every code is listed anyway (the taxonomy, an agreement result: the
        `agreement` secret covers the latter)."""
        parts = {p for p in ("note", "evidence") if getattr(self, p) in body}
        if self.time_shown in body:
            parts.add("time")
        marker = {"page": f'data-code="{self.code}"', "api": f'"{self.code}"', "file": self.code}
        if not codes_listed and marker[kind] in body:
            parts.add("label")
        return parts


SECRETS = (
    Secret(
        "alice",
        "t1",
        "ambiguous_instruction",
        "alice-secret-note",
        "alice-secret-evidence",
        3_456_700,
        frozenset({"annotator", "moderator", "lead", "lead_annotating"}),
    ),
    Secret(
        "bob",
        "t3",
        "signature_mismatch",
        "bob-secret-note",
        "bob-secret-evidence",
        4_321_700,
        frozenset({"moderator", "lead"}),
    ),
    Secret(
        "lena",
        "t3",
        "must_not_violation",
        "lena-secret-note",
        "lena-secret-evidence",
        1_234_500,
        frozenset({"moderator", "lead", "lead_annotating"}),
    ),
    Secret(
        "dora",
        "u1",
        "cross_turn_inconsistency",
        "dora-secret-note",
        "dora-secret-evidence",
        2_345_600,
        frozenset({"other_group", "lead", "lead_annotating"}),
    ),
)
# the agreement result counts bob's and lena's round-1 labels on card 3: the leads' and the
# moderators' (the report), but not lena's while she labels card 3 blind
AGREEMENT_SEEN_BY = frozenset({"moderator", "lead"})


def build(study: Study, lead, alice, bob) -> dict:
    mod, dora, lena, stranger = (make_user(n) for n in ("mod", "dora", "lena", "stranger"))
    g1 = make_group(study, "g1", annotators=[alice, bob], moderator=mod)
    g2 = make_group(study, "g2", annotators=[dora])
    c2 = make_conversation(study, "c2", n_turns=2, group=g2)
    c1 = make_conversation(study, "c1", n_turns=3, group=g1)
    t1, t2, t3 = c1.turns.order_by("index")
    cards = {"t1": t1, "t3": t3, "u1": c2.turns.get(index=1)}
    users = {"alice": alice, "bob": bob, "dora": dora, "lena": lena}
    by_author = {s.author: s for s in SECRETS}
    _work(cards, users, by_author["alice"])
    label(t1, bob)  # disputed: alice's labels open to the group
    label(t2, alice, ROLLBACK)
    label(t2, bob, ROLLBACK)
    study.add_member(lena, Role.LEAD)
    g1.annotators.add(lena)
    for author in ("bob", "lena", "dora"):
        _work(cards, users, by_author[author])
    make_study("s2").add_member(stranger, Role.LEAD)
    Proposal.propose(study=study, turn=t1, proposer=alice, name="N", definition="D", reason="R")
    jobs = _run_jobs(study, lead, lena)
    roles = {"annotator": alice, "other_group": dora, "moderator": mod, "lead": lead}
    roles |= {"lead_annotating": lena, "other_study": stranger}
    return {"users": roles, "turns": (t1, t2, t3), "u1": cards["u1"], "c1": c1, **jobs}


def _work(cards: dict, users: dict, secret: Secret) -> None:
    turn, author = cards[secret.card], users[secret.author]
    label(turn, author, secret.code, note=secret.note, evidence=secret.evidence)
    CardTime.objects.create(turn=turn, annotator=author, active_ms=secret.time_ms)


def _run_jobs(study: Study, lead, lena) -> dict:
    """A finished agreement job; a raw CSV export by the lead (every note in it) and one by
    lena (made blind for her)."""
    params = {"round": 1, "seed": 0, "n_boot": 20}
    agreement = Job.objects.create(study=study, kind=JobKind.AGREEMENT, params=params)
    run_agreement(agreement.pk)
    exports = {}
    for name, user in (("export", lead), ("lena_export", lena)):
        params = {"format": "csv", "raw": True, "round": None, "with_text": False}
        job = Job.objects.create(study=study, kind=JobKind.EXPORT, params=params, created_by=user)
        run_export(job.pk)
        exports[name] = job
    return {"agreement": agreement, **exports}


def page_client(world: dict, role: str) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(world["users"][role])
    return client


def api_client(world: dict, role: str):
    from rest_framework.test import APIClient

    return APIClient() if role == "anonymous" else token_client(world["users"][role])


def findings(role: str, answers: list[tuple[str, object, bool]]) -> tuple[list, set]:
    """What `role` got that it may not see: ["author's part at where"], and every
    (author, part) it did see (to tell that a secret the role may see does show). `answers`:
    (where, response, whether the taxonomy's codes are all listed there)."""
    leaked, seen = [], set()
    for where, response, codes_listed in answers:
        body = body_of(response)
        kind = "file" if is_file(response) else ("api" if where.startswith("API") else "page")
        agreement = shows_agreement(body)
        if agreement:
            seen.add(("agreement", "result"))
            if role not in AGREEMENT_SEEN_BY:
                leaked.append(f"the agreement result at {where}")
        for secret in SECRETS:
            parts = secret.parts_in(body, kind, codes_listed=codes_listed or agreement)
            seen |= {(secret.author, p) for p in parts}
            if parts and role not in secret.seen_by:
                leaked.append(f"{secret.author}'s {sorted(parts)} at {where}")
    return leaked, seen


def assert_seen(role: str, seen: set, parts: tuple[str, ...], agreement: bool) -> None:
    """Each secret `role` may see shows somewhere in its answers (these `parts` of it), and
    the agreement result if `agreement`: the matrix reads answers that do carry secrets, so
    a clean answer is not a blank one."""
    for secret in SECRETS:
        if role in secret.seen_by:
            missing = {p for p in parts if (secret.author, p) not in seen}
            assert not missing, f"{role} should see {secret.author}'s {sorted(missing)}"
    assert (("agreement", "result") in seen) == agreement, "the agreement result"
