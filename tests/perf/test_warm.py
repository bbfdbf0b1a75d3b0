"""A server process loads the highlighting of the common languages before its first request
(config/wsgi.py calls annotation.rendering.warm): Pygments builds each lexer on first use,
up to 40 ms a language, which each gunicorn worker otherwise paid on the cards that first
showed each language (benchmarks/load_test.py saw it in the label request's p95)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
from annotation import rendering
before = rendering._lexer.cache_info()
for lang in ("python", "css", "typescript", "sql", "rust"):
    rendering.message_html(f"```{lang}\\nx = 1\\n```")
# guessed, not named: a C# block without a fence language
rendering.message_html("```\\nusing System;\\npublic class A { private int x; }\\n```")
after = rendering._lexer.cache_info()
print(after.misses - before.misses, after.currsize)
"""


def probe(warm: bool) -> tuple[int, int]:
    head = "import config.wsgi\n" if warm else "import django; django.setup()\n"
    env = dict(
        os.environ, DJANGO_SETTINGS_MODULE="config.settings", SECRET_KEY=secrets.token_urlsafe(50)
    )
    out = subprocess.run(
        [sys.executable, "-c", head + PROBE], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    misses, size = out.stdout.split()
    return int(misses), int(size)


def test_the_wsgi_application_has_the_lexers_loaded_before_the_first_card():
    misses, size = probe(warm=True)
    assert misses == 0
    assert size >= 16


def test_without_it_the_first_cards_load_them():
    misses, _size = probe(warm=False)
    assert misses == 6
