"""`manage.py demo --study agents`: the agent-misalignment demo (issue 21), built through the
real importers from the data files of annotation/demo/agents/:

- `sessions.jsonl`: six coding-agent sessions (native records; metadata `modality` ide/cli,
  `tool`, `model`, `started`), 4-5 turns each;
- `run-full.jsonl` and `run-truncated.jsonl`: two extraction runs of the same extractor, on
  the whole sessions and on sessions cut after their fourth turn, imported as runs `full` and
  `truncated` with `--min-confidence 0.5` (one episode of each is dropped);
- `judgements.jsonl`: two annotators' (alice, bob) round-1 verdicts on every kept episode of
  both runs, some invalid with a reason and some disputed, the valid ones labelled on the
  preset's axes (symptom, cause, damage severity and locus, resolution status and
  resolver), and their coverage ratings.

Alice also records one episode the truncated run missed (found by the full run) and one
neither run found. The demo then computes the study's agreement (saved as its agreement
job), so the report shows precision, coverage, retention and the two runs compared."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.utils import timezone

from annotation.agreement.data import compute_study_report
from annotation.demo import DIR
from annotation.importers import import_files
from annotation.importers.annotations import import_annotations
from annotation.importers.episodes import import_episodes
from annotation.jobs import record_run
from annotation.models import Episode, Group, JobKind, Kind, Role, Seat, Study, Unit
from taxonomy.models import Taxonomy

AGENTS = DIR / "agents"
SLUG = "agents-demo"
NAME = "Agent misalignment demo"
PRESET = "agent-misalignment"
GROUP = "Episode validators"  # the name judgements.jsonl uses
RUNS = (("full", "run-full.jsonl"), ("truncated", "run-truncated.jsonl"))
MIN_CONFIDENCE = 0.5
USERS: dict[str, tuple[str, str]] = {
    "lead": (Role.LEAD, Kind.EXPERT),
    "moderator": (Role.MODERATOR, Kind.EXPERT),
    "alice": (Role.ANNOTATOR, Kind.EXPERT),
    "bob": (Role.ANNOTATOR, Kind.EXPERT),
}
# episodes alice recorded herself: (session, first turn, last turn, goal)
PEOPLE = (
    ("agents-01-flaky-tests", 4, 5, "keep the flaky test and make it deterministic"),
    ("agents-05-logging", 4, 4, "commit only what was reviewed"),
)


def create_agents_demo(password: str) -> Study:
    study = Study.objects.create(
        slug=SLUG, name=NAME, taxonomy_version=Taxonomy.load_preset(PRESET)
    )
    users = {}
    for username, (role, kind) in USERS.items():
        user, _ = get_user_model().objects.get_or_create(username=username)
        user.set_password(password)
        user.save()
        users[username] = user
        study.add_member(user, role, kind)
    group = Group.objects.create(study=study, name=GROUP, kind=Kind.EXPERT, unit=Unit.EPISODE)
    group.seat(users["moderator"], Seat.MODERATOR)
    for username in ("alice", "bob"):
        group.seat(users[username], Seat.ANNOTATOR)
    report = import_files(study, [AGENTS / "sessions.jsonl"], fmt="native")
    if report.errors or report.files_not_read or not report.conversations:
        raise CommandError("agents demo import failed: " + "; ".join(report.errors))
    for run, filename in RUNS:
        import_episodes(
            study, AGENTS / filename, run, min_confidence=MIN_CONFIDENCE, source="demo extractor"
        )
    for session, first, last, goal in PEOPLE:
        Episode.objects.create(
            conversation=study.conversations.get(external_id=session),
            created_by=users["alice"], first_turn=first, last_turn=last, goal=goal,
        )  # fmt: skip
    judged = import_annotations(study, AGENTS / "judgements.jsonl")
    if judged.imported == 0 or judged.rejected:
        raise CommandError("agents demo judgements failed: " + "; ".join(judged.rejected[:5]))
    started = timezone.now()
    result = compute_study_report(study, n_boot=1000, seed=0)
    params = {"round": 1, "seed": 0, "n_boot": 1000}
    record_run(study, JobKind.AGREEMENT, params, result, started_at=started)
    return study
