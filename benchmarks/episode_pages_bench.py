"""The episode pages on a big episode study (issues 21 and 25): what an annotator, a moderator
and a lead open in a group that judges episodes, through Django's test client with DEBUG off,
warm: per page the median and p95 of --runs requests, its queries, and the ratio to the health
check, as benchmarks/pages_bench.py prints them (whose settings and timing it uses).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/cardsort_episode_pages \\
        .venv/bin/python benchmarks/episode_pages_bench.py [--episodes 100000] [--runs 7]

The study: --episodes episodes (default 100,000) of one extraction run, ten to a session of
twenty turns (so --episodes / 10 sessions), in one episode group of two annotators with a
moderator, and a lead. The other annotator has judged every episode in round 1; `me`, the
benchmark's annotator, the first half (a third of those against the other: in discussion);
of those, one in ten was judged again in round 2 by both, still apart: escalated to the
moderator. The database of DATABASE_URL is dropped and made again unless --reuse finds the
same study there (SQLite only with --sqlite)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pages_bench as bench  # noqa: E402  (benchmarks/pages_bench.py: settings, timing)

SLUG = "episodes"
PER_SESSION, TURNS = 10, 20
USERS = {"anyone": "lead", "annotator": "me", "moderator": "moderator", "lead": "lead"}


def build(n_episodes: int) -> None:
    from django.contrib.auth import get_user_model

    from annotation.models import (
        Assignment,
        Conversation,
        Episode,
        EpisodeJudgement,
        ExtractionRun,
        Group,
        Kind,
        Role,
        Source,
        Study,
        Turn,
        Unit,
    )
    from taxonomy.models import Taxonomy

    started = time.perf_counter()
    version = Taxonomy.load_preset("agent-misalignment")
    study = Study.objects.create(
        slug=SLUG, name="Episodes", taxonomy_version=version,
        description=f"episode_pages_bench n={n_episodes}",
    )  # fmt: skip
    User = get_user_model()
    names = ("me", "other", "moderator", "lead")
    people = {name: User.objects.create_user(name, password=bench.PASSWORD) for name in names}
    for name in ("me", "other"):
        study.add_member(people[name], Role.ANNOTATOR, Kind.EXPERT)
    study.add_member(people["moderator"], Role.MODERATOR, Kind.EXPERT)
    study.add_member(people["lead"], Role.LEAD, Kind.EXPERT)
    group = Group.objects.create(
        study=study, name="E1", unit=Unit.EPISODE, moderator=people["moderator"]
    )
    group.annotators.add(people["me"], people["other"])
    n_sessions = max(1, n_episodes // PER_SESSION)
    sessions = Conversation.objects.bulk_create(
        (Conversation(study=study, external_id=f"s{i}", source_format="native", n_turns=TURNS)
         for i in range(n_sessions)),
        batch_size=5_000,
    )  # fmt: skip
    Turn.objects.bulk_create(
        (Turn(conversation=s, index=t, user_text=f"Step {t}: change the parser of module {i}.",
              reply_text=f"I edited parser_{i}.py and ran the tests ({t} passed).")
         for i, s in enumerate(sessions) for t in range(1, TURNS + 1)),
        batch_size=10_000,
    )  # fmt: skip
    Assignment.objects.bulk_create(
        (Assignment(conversation=s, group=group) for s in sessions), batch_size=10_000
    )
    run = ExtractionRun.objects.create(study=study, name="extractor")
    episodes = Episode.objects.bulk_create(
        (Episode(conversation=sessions[i // PER_SESSION % n_sessions], run=run,
                 first_turn=1 + 2 * (i % PER_SESSION), last_turn=2 + 2 * (i % PER_SESSION),
                 goal=f"keep the API of module {i}")
         for i in range(n_episodes)),
        batch_size=10_000,
    )  # fmt: skip
    me, other = people["me"], people["other"]

    def judged(episode, who, valid: bool, round: int = 1) -> EpisodeJudgement:
        return EpisodeJudgement(
            episode=episode, group=group, annotator=who, round=round, valid=valid,
            invalid_reason="" if valid else "other", taxonomy_version=version,
            source=Source.IMPORT,
        )  # fmt: skip

    rows = []
    for i, episode in enumerate(episodes):
        rows.append(judged(episode, other, True))
        if i < n_episodes // 2:
            apart = i % 3 == 0
            rows.append(judged(episode, me, not apart))
            if apart and i % 30 == 0:  # judged again in round 2, still apart: escalated
                rows += [judged(episode, other, True, 2), judged(episode, me, False, 2)]
    EpisodeJudgement.objects.bulk_create(rows, batch_size=10_000)
    print(
        f"built {n_episodes:,} episodes in {n_sessions:,} sessions, {len(rows):,} judgements "
        f"in {time.perf_counter() - started:.1f} s"
    )


def pages() -> list[tuple[str, str, str, dict]]:
    from django.urls import reverse

    from annotation.episodes.queue import next_episode
    from annotation.models import Episode, Group, Study

    study = Study.objects.get(slug=SLUG)
    group = Group.objects.get(study=study, name="E1")
    me = group.annotators.get(username="me")
    todo = next_episode(me, study)
    first = Episode.objects.filter(conversation__study=study).order_by("pk").first()
    s, g = [SLUG], f"?group={group.pk}"
    return [
        ("anyone", "health check (the floor)", reverse("healthz"), {}),
        ("annotator", "next episode (queue/, to it)", reverse("queue", args=s), {"follow": True}),
        ("annotator", "an episode", reverse("episode_card", args=[SLUG, todo]), {}),
        ("annotator", "study home", reverse("study", args=s), {}),
        ("annotator", "sessions", reverse("episode_sessions", args=s), {}),
        ("annotator", "a session", reverse("episode_session", args=[SLUG, first.conversation_id]),
         {}),
        ("moderator", "episodes to decide", reverse("moderate_episodes", args=s), {}),
        ("moderator", "next escalated", reverse("next_escalated", args=s), {}),
        ("moderator", "an episode (decide)", reverse("episode_card", args=[SLUG, first.pk]) + g,
         {}),
        ("lead", "study page", reverse("study", args=s), {}),
        ("lead", "time per card", reverse("lead_card_times", args=s), {}),
        ("lead", "report", reverse("report", args=s), {}),
        ("lead", "API, episodes", reverse("api-episodes", args=s), {}),
        ("lead", "methods text", reverse("report_methods", args=s), {}),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=100_000, help="episodes in the study")
    parser.add_argument("--runs", type=int, default=7, help="requests timed per page")
    parser.add_argument("--reuse", action="store_true", help="keep the study built before")
    parser.add_argument("--sqlite", action="store_true", help="allow the embedded SQLite")
    parser.add_argument("--slowest", type=int, default=0, help="each page's N slowest queries")
    args = parser.parse_args()
    vendor = bench.start(args)
    described = f"episode_pages_bench n={args.episodes}"
    if bench.built_before(SLUG, described, "episode_pages_bench") is None:
        build(args.episodes)
        if vendor == "postgresql":
            from django.db import connection

            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
    rows = bench.measure(args.runs, slowest=args.slowest, listed=pages(), users=USERS)
    title = f"{args.episodes:,} episodes in {args.episodes // PER_SESSION:,} sessions"
    bench.report(rows, vendor, {}, args.runs, title=title)


if __name__ == "__main__":
    main()
