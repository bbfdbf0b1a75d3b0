"""The access matrices' study (tests/api/test_access_matrix.py for the API,
tests/access/test_page_matrix.py for the pages, partials and downloads): one user of each
role, one secret of each annotator (labels, note, evidence, time on the card; an open-sort
tag set), finished agreement and export jobs, and what each role may see of each secret. The matrices read
every answer's body (a download's file too) for every (role, author) pair, not only its
status.

g1: alice and bob, moderated by `mod`, on c1: card 1 disputed (alice's secret), card 2
agreed; then lena, a lead, joins g1, and bob and lena label card 3, which stays in round 1
(alice has not labelled it): bob's and lena's secrets there are blind for alice and for
each other. g2: dora alone on c2, whose card 1 left round 1 with her label. "experts", in
the open sort (the group's phase): dora and lena on c3, whose card dora tagged (her tags,
description and note are nobody else's before the freeze). `stranger` leads another
study."""

from __future__ import annotations

from dataclasses import dataclass

from django.test import Client
from rest_framework.test import APIClient

from annotation.actions.judges import judge_user, write_labels
from annotation.models import (
    CardTime,
    Job,
    JobKind,
    JudgeRun,
    JudgeRunStatus,
    JudgeScore,
    Kind,
    Phase,
    Proposal,
    Role,
    Seat,
    Study,
)
from annotation.opensort.tagging import TagInput, save_tag_set
from annotation.tasks import run_agreement, run_export, run_times
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
    that may see it (the author, and whoever may see the card's round-1 labels): labels
    (`code`, with a note, evidence and time on the card) or, in the open sort, a tag set
    (`tag`, its description as `evidence`, and a note)."""

    author: str
    card: str  # "t1", "t3", "u1", "v1"
    note: str
    evidence: str
    seen_by: frozenset[str]
    code: str = ""
    time_ms: int = 0
    tag: str = ""
    # a machine judge's name (its pseudo-user): shown to the leads only
    shown_as: str = ""

    @property
    def name(self) -> str:
        return f"{self.author}'s {'tags' if self.tag else 'labels'}"

    @property
    def kind(self) -> str:
        return "tags" if self.tag else "labels"

    def parts_in(self, body: str, kind: str, codes_listed: bool = False) -> set[str]:
        """Which parts of the secret `body` shows: a label as the page renders it
        (data-code=...), as the API's JSON quotes it, or as a file writes it; none of the
        codes where every code is listed anyway (the taxonomy, an agreement result: the
        `agreement` secret covers the latter)."""
        parts = {
            p for p in ("note", "evidence", "tag") if getattr(self, p) and getattr(self, p) in body
        }
        if self.shown_as and self.shown_as in body:
            parts.add("name")
        # as time per card shows it; in milliseconds in a job's result (the API, a file)
        shown = f"{self.time_ms / 1000:.1f} s" in body
        if self.time_ms and (shown or (kind != "page" and str(self.time_ms) in body)):
            parts.add("time")
        marker = {"page": f'data-code="{self.code}"', "api": f'"{self.code}"', "file": self.code}
        if self.code and not codes_listed and marker[kind] in body:
            parts.add("label")
        return parts


HUMAN_SECRETS = (
    Secret(
        "alice",
        "t1",
        "alice-secret-note",
        "alice-secret-evidence",
        frozenset({"annotator", "moderator", "lead", "lead_annotating"}),
        code="ambiguous_instruction",
        time_ms=3_456_700,
    ),
    Secret(
        "bob",
        "t3",
        "bob-secret-note",
        "bob-secret-evidence",
        frozenset({"moderator", "lead"}),
        code="signature_mismatch",
        time_ms=4_321_700,
    ),
    Secret(
        "lena",
        "t3",
        "lena-secret-note",
        "lena-secret-evidence",
        frozenset({"moderator", "lead", "lead_annotating"}),
        code="must_not_violation",
        time_ms=1_234_500,
    ),
    Secret(
        "dora",
        "u1",
        "dora-secret-note",
        "dora-secret-evidence",
        frozenset({"other_group", "lead", "lead_annotating"}),
        code="cross_turn_inconsistency",
        time_ms=2_345_600,
    ),
    # the open sort is blind for everyone but the author until the freeze
    Secret(
        "dora",
        "v1",
        "dora-tag-note",
        "dora-secret-description",
        frozenset({"other_group"}),
        tag="dora-secret-tag",
    ),
)
# A machine judge's run in g1 (issue 22): its labels on card 1 (disputed), card 2 (agreed)
# and card 3 (open),
# with their evidence, its name (the pseudo-user) and its run: the leads' only. A lead who
# annotates (lena) may see it on card 1, past round 1, but not on card 3, which she labels
# blind; moderators and annotators never see anything of it.
JUDGE_NAME = "llm-judge-secret-model@abc123"
JUDGE_SECRETS = (
    Secret(
        "judge-t1",
        "t1",
        "",
        "judge-secret-quote-t1",
        frozenset({"lead", "lead_annotating"}),
        code="partial_functionality_breakdown",
        shown_as=JUDGE_NAME,
    ),
    # on the agreed card: the report's judge measures (each annotator against the consensus)
    Secret(
        "judge-t2",
        "t2",
        "",
        "judge-secret-quote-t2",
        frozenset({"lead", "lead_annotating"}),
        code="incomplete_instruction",
        shown_as=JUDGE_NAME,
    ),
    Secret(
        "judge-t3",
        "t3",
        "",
        "judge-secret-quote-t3",
        frozenset({"lead"}),
        code="repetitive_response",
    ),
)
SECRETS = HUMAN_SECRETS + JUDGE_SECRETS
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
    study.add_member(lena, Role.LEAD, Kind.EXPERT)
    experts = make_group(study, "experts", annotators=[dora, lena], kind=Kind.EXPERT)
    experts.phase = Phase.OPEN_SORT
    experts.save(update_fields=["phase"])
    v1 = make_conversation(study, "c3", n_turns=1, group=experts).turns.get()
    cards = {"t1": t1, "t2": t2, "t3": t3, "u1": c2.turns.get(index=1), "v1": v1}
    users = {"alice": alice, "bob": bob, "dora": dora, "lena": lena}
    first, *others = HUMAN_SECRETS
    _work(cards, users, first)  # alice's, on card 1
    label(t1, bob)  # disputed: alice's labels open to the group
    label(t2, alice, ROLLBACK)
    label(t2, bob, ROLLBACK)
    g1.annotators.add(lena)
    for secret in others:
        _work(cards, users, secret)
    _judge_run(study, g1, cards)
    make_study("s2").add_member(stranger, Role.LEAD)
    Proposal.propose(study=study, turn=t1, proposer=alice, name="N", definition="D", reason="R")
    jobs = _run_jobs(study, lead, lena)
    roles = {"annotator": alice, "other_group": dora, "moderator": mod, "lead": lead}
    roles |= {"lead_annotating": lena, "other_study": stranger}
    return {"users": roles, "turns": (t1, t2, t3), "c1": c1, **cards, **jobs}


def _work(cards: dict, users: dict, secret: Secret) -> None:
    turn, author = cards[secret.card], users[secret.author]
    if secret.tag:
        group = turn.conversation.groups.get()
        tags = [TagInput(secret.tag, secret.evidence)]
        save_tag_set(turn=turn, group=group, annotator=author, tags=tags, note=secret.note)
        return
    label(turn, author, secret.code, note=secret.note, evidence=secret.evidence)
    CardTime.objects.create(turn=turn, annotator=author, active_ms=secret.time_ms)


def _judge_run(study: Study, group, cards: dict) -> None:
    """A finished llm-annotate run in `group` whose labels are the judge secrets, written
    as a run writes them (its pseudo-user seated as the group's judge, its scores kept,
    its labels recorded from them: annotation/actions/judges.py)."""
    user = judge_user(JUDGE_NAME)
    group.seat(user, Seat.JUDGE)
    run = JudgeRun.objects.create(
        study=study, group=group, judge="llm-annotate", version="abc123", user=user,
        model="judge-secret-model", status=JudgeRunStatus.DONE,
        counts={"units_total": 2, "units_done": 2, "labelled": 2},
    )  # fmt: skip
    types = study.taxonomy_version.types_by_code()
    for secret in JUDGE_SECRETS:
        turn = cards[secret.card]
        evidence = {"turns": [turn.index], "quotes": [secret.evidence], "detail": ""}
        scores = {secret.code: (0.9, evidence), "code_rollback": (0.1, evidence)}
        for code, (score, ev) in scores.items():
            JudgeScore.objects.create(
                run=run, turn=turn, type=types[code], score=score, evidence=ev
            )
        write_labels(run, turn, scores, types)


def _run_jobs(study: Study, lead, lena) -> dict:
    """A finished agreement job; a raw CSV export by the lead (every note in it) and one by
    lena (made blind for her); time per card's kept tables (a `times` job: everyone's
    times, lena's fellow annotator bob's on card 3 included)."""
    params = {"round": 1, "seed": 0, "n_boot": 20}
    agreement = Job.objects.create(study=study, kind=JobKind.AGREEMENT, params=params)
    run_agreement(agreement.pk)
    exports = {}
    for name, user in (("export", lead), ("lena_export", lena)):
        params = {"format": "csv", "raw": True, "round": None, "with_text": False}
        job = Job.objects.create(study=study, kind=JobKind.EXPORT, params=params, created_by=user)
        run_export(job.pk)
        exports[name] = job
    times = Job.objects.create(study=study, kind=JobKind.TIMES, created_by=lead)
    run_times(times.pk)
    return {"agreement": agreement, **exports, "times": times}


def page_client(world: dict, role: str) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(world["users"][role])
    return client


def api_client(world: dict, role: str) -> APIClient:
    return APIClient() if role == "anonymous" else token_client(world["users"][role])


def findings(role: str, answers: list[tuple[str, object, bool]]) -> tuple[list, set]:
    """What `role` got that it may not see (["secret: parts at where"]), and every (secret,
    part) it did see, to tell that a secret the role may see does show. `answers`: (where,
    response, whether every code of the taxonomy is listed there anyway)."""
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
            seen |= {(secret.name, p) for p in parts}
            if parts and role not in secret.seen_by:
                leaked.append(f"{secret.name}: {sorted(parts)} at {where}")
    return leaked, seen


def assert_seen(role: str, seen: set, parts: dict[str, tuple[str, ...]], agreement: bool) -> None:
    """Each secret `role` may see shows somewhere in its answers (these `parts` of it, by
    the secret's kind: labels or tags), and the agreement result if `agreement`: the matrix
    reads answers that do carry secrets, so a clean answer is not a blank one."""
    for secret in SECRETS:
        if role in secret.seen_by:
            has = {"note": secret.note, "evidence": secret.evidence, "label": secret.code,
                   "time": secret.time_ms, "tag": secret.tag, "name": secret.shown_as}  # fmt: skip
            wanted = [p for p in parts[secret.kind] if has[p]]
            missing = {p for p in wanted if (secret.name, p) not in seen}
            assert not missing, f"{role} should see {secret.name}: {sorted(missing)}"
    assert (("agreement", "result") in seen) == agreement, "the agreement result"
