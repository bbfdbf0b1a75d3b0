"""The episode queue (issue 21 point 2): an annotator's next episode, found by replaying the
rounds of every episode of their groups (annotation/episodes/queue.py), against the floor of
reading the same rows (the episodes with their group, the current judgements) and nothing
more. A group of two annotators judges --episodes episodes (default 5,000) of --sessions
sessions; the other annotator has judged each, the bench's annotator the first half (a
third of those disagreeing: in a discussion round).

    .venv/bin/python benchmarks/episode_queue_bench.py [--episodes 5000] [--sessions 500]
        [--database-url sqlite:///... | postgres://...]

It prints the median of 5 runs of each and their ratio (queue / floor). The database is a
temporary SQLite file unless --database-url names one (it is migrated and filled: use an
empty database of your own)."""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _median(fn, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run(n_episodes: int, n_sessions: int) -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotation.episodes.queue import next_episode
    from annotation.models import (
        Assignment,
        Conversation,
        Episode,
        EpisodeJudgement,
        ExtractionRun,
        Group,
        Source,
        Study,
        Unit,
    )
    from taxonomy.models import Taxonomy

    call_command("migrate", verbosity=0)
    version = Taxonomy.load_preset("agent-misalignment")
    study = Study.objects.create(slug="bench", name="bench", taxonomy_version=version)
    User = get_user_model()
    me, other = User.objects.create(username="me"), User.objects.create(username="other")
    group = Group.objects.create(study=study, name="E1", unit=Unit.EPISODE)
    group.annotators.add(me, other)
    sessions = Conversation.objects.bulk_create(
        Conversation(study=study, external_id=f"s{i}", source_format="native", n_turns=40)
        for i in range(n_sessions)
    )
    Assignment.objects.bulk_create(Assignment(conversation=c, group=group) for c in sessions)
    per = max(1, n_episodes // n_sessions)
    run = ExtractionRun.objects.create(study=study, name="bench")  # an extractor's episodes
    episodes = Episode.objects.bulk_create(
        Episode(conversation=sessions[i // per % n_sessions], run=run, first_turn=1 + i % per,
                last_turn=2 + i % per)
        for i in range(n_episodes)
    )  # fmt: skip
    rows = []
    for i, e in enumerate(episodes):
        common = {"episode": e, "group": group, "taxonomy_version": version}
        rows.append(EpisodeJudgement(annotator=other, valid=True, source=Source.IMPORT, **common))
        if i < n_episodes // 2:
            valid = i % 3 != 0  # a third disagree with the other annotator
            reason = "" if valid else "other"
            rows.append(
                EpisodeJudgement(annotator=me, valid=valid, invalid_reason=reason,
                                 source=Source.IMPORT, **common)
            )  # fmt: skip
    EpisodeJudgement.objects.bulk_create(rows, batch_size=5_000)

    def floor() -> None:
        list(
            Episode.objects.filter(
                conversation__study=study, conversation__assignments__group__in=[group]
            )
            .order_by("conversation_id", "first_turn", "last_turn", "pk")
            .values_list("pk", "conversation__assignments__group_id")
        )
        list(
            EpisodeJudgement.objects.filter(group_id__in=[group.pk], is_current=True).values_list(
                "pk", "episode_id", "group_id", "annotator_id", "round", "valid",
                "invalid_reason", "labels",
            )
        )  # fmt: skip

    def episodes_only() -> None:
        list(
            Episode.objects.filter(
                conversation__study=study, conversation__assignments__group__in=[group]
            )
            .order_by("conversation_id", "first_turn", "last_turn", "pk")
            .values_list("pk", "conversation__assignments__group_id")
        )

    if os.environ.get("EPISODE_QUEUE_PARTS"):
        print(f"episodes-only {_median(episodes_only):.4f}")
    found = next_episode(me, study)
    assert found is not None
    if os.environ.get("EPISODE_QUEUE_PROFILE"):
        import cProfile
        import pstats

        profile = cProfile.Profile()
        profile.runcall(next_episode, me, study)
        pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(15)
    queue_s = _median(lambda: next_episode(me, study))
    floor_s = _median(floor)
    print(f"{queue_s:.4f} {floor_s:.4f} {len(rows)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=5_000)
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.child:
        run(args.episodes, args.sessions)
        return
    folder = tempfile.mkdtemp(prefix="episode-queue-bench-")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "CARDSORT_DATA_DIR": folder,
        "LOG_LEVEL": "WARNING",
        "DATABASE_URL": args.database_url or f"sqlite:///{folder}/bench.sqlite3",
    }
    out = subprocess.run(
        [sys.executable, __file__, *sys.argv[1:], "--child"],
        env=env, check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    if "episodes-only" in out:
        print("the episodes' rows alone:", out[out.index("episodes-only") + 1], "s")
    queue_s, floor_s, judgements = float(out[-3]), float(out[-2]), int(out[-1])
    print(
        f"next episode of {args.episodes:,} episodes ({judgements:,} judgements): "
        f"{queue_s * 1000:.1f} ms; reading the same rows: {floor_s * 1000:.1f} ms; "
        f"ratio {queue_s / floor_s:.2f}"
    )


if __name__ == "__main__":
    main()
