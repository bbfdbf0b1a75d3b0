"""A Celery worker whose exports are slow, for the tests that kill a worker mid-export:
`python -m tests.slow_worker SECONDS ARGS...` runs `celery ARGS...` with every export
sleeping SECONDS after each row it writes (each batch in Parquet), whatever the machine's
speed. The slowing is a patch of the export writers made here, before the worker starts (its
pool processes fork with it): the production code has no switch for it."""

from __future__ import annotations

import os
import sys
import time


def slow_exports(seconds: float) -> None:
    """Wrap annotation.exports' writers so that each progress step sleeps `seconds` (the
    export job imports them when it runs, so it gets these)."""
    from annotation import exports

    def slowed(write):
        def wrapper(*args, progress=None, **kwargs):
            def step(n: int) -> None:
                if progress is not None:
                    progress(n)
                time.sleep(seconds)

            return write(*args, progress=step, **kwargs)

        return wrapper

    exports.write_gold = slowed(exports.write_gold)
    exports.write_raw = slowed(exports.write_raw)


def worker_command(seconds: float, command: list[str]) -> list[str]:
    """`command` (a `python -m celery ...` command line) as a slow worker's."""
    python, dash_m, celery, *args = command
    assert (dash_m, celery) == ("-m", "celery"), command
    return [python, "-m", "tests.slow_worker", str(seconds), *args]


def main(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    slow_exports(float(argv[0]))
    from celery.__main__ import main as celery_main

    sys.argv = ["celery", *argv[1:]]
    celery_main()


if __name__ == "__main__":
    main(sys.argv[1:])
