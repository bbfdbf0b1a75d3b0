"""Rendering benchmark: what showing a turn's text costs the server (annotation/rendering.py).

    .venv/bin/python benchmarks/render_bench.py [--lines 300] [--repeat 20]

Prints, in milliseconds (median of --repeat runs, each on a text never seen before, so no
cache helps, unless the line says "cached"):
- guessing the language of a --lines block with no fence language: our shortlist guess
  (annotation/code_guess.py), cold and cached, beside Pygments' own guess_lexer;
- highlighting that block (Python), and rendering a whole reply holding it (Markdown,
  highlighting, sanitizing), cold and cached;
- a typical chat reply (prose, a list, a 30-line block without language);
- an agent turn's 20 reply parts (tool calls with JSON arguments, outputs, thinking).
No Django database is needed."""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# outside debug the settings need a strong key
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))

import django  # noqa: E402

django.setup()

from pygments import highlight  # noqa: E402
from pygments.formatters import HtmlFormatter  # noqa: E402
from pygments.lexers import get_lexer_by_name, guess_lexer  # noqa: E402

from annotation import code_guess, rendering  # noqa: E402

PYTHON = (ROOT / "annotation" / "models.py").read_text().splitlines()


def block(lines: int, salt: int) -> str:
    """`lines` lines of real Python, made unique by `salt` (a cache must not answer)."""
    body = (PYTHON * (lines // len(PYTHON) + 1))[: lines - 1]
    return f"# variant {salt}\n" + "\n".join(body)


def timed(fn: Callable[[int], object], repeat: int) -> float:
    """Median milliseconds of fn(i) over `repeat` calls, each with its own i."""
    fn(-1)  # imports, lexer loading: once per process, not per card
    times = []
    for i in range(repeat):
        start = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def chat_reply(salt: int) -> str:
    code = "\n".join(f"    total += item.price * {salt + i}" for i in range(30))
    return (
        f"You can **fix** it like this (variant {salt}):\n\n1. read the `items`\n2. sum them\n\n"
        f"```\ndef total(items):\n    total = 0\n    for item in items:\n{code}\n"
        "    return total\n```"
        "\n\nSee [the docs](https://docs.python.org/3/) for more."
    )


def agent_parts(salt: int) -> list[dict]:
    parts = []
    for i in range(10):
        args = {"command": f"grep -rn 'def total' src/ # {salt}-{i}", "timeout": 120}
        parts.append({"type": "tool_call", "name": "Bash", "arguments": json.dumps(args)})
        output = "\n".join(f"src/m{j}.py:{j}: def total(items): # {salt}" for j in range(40))
        parts.append({"type": "tool_result", "content": output})
    parts.append({"type": "thinking", "thinking": f"The sum is wrong in **m3** ({salt})."})
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    n, r = args.lines, args.repeat
    lexer, html = get_lexer_by_name("python"), HtmlFormatter(nowrap=True)
    guess = code_guess.guess_language
    cached = block(n, 0)
    cached_reply = f"```\n{cached}\n```"

    def fresh_reply(i: int) -> object:
        return rendering.message_html(f"```\n{block(n, i + 1)}\n```")

    rows = [
        (f"guess, {n}-line block, shortlist", lambda i: guess(block(n, i + 1))),
        (f"guess, {n}-line block, shortlist, cached", lambda i: guess(cached)),
        (f"guess, {n}-line block, Pygments guess_lexer", lambda i: guess_lexer(block(n, i + 1))),
        (f"highlight, {n}-line Python block", lambda i: highlight(block(n, i + 1), lexer, html)),
        (f"reply with a {n}-line block, no language", fresh_reply),
        (f"reply with a {n}-line block, cached", lambda i: rendering.message_html(cached_reply)),
        ("chat reply: prose, list, 30-line block", lambda i: rendering.message_html(chat_reply(i))),
        ("agent turn: 21 reply parts", lambda i: [rendering.reply_part(p) for p in agent_parts(i)]),
    ]
    results = [(name, timed(fn, r)) for name, fn in rows]
    width = max(len(name) for name, _ in results)
    for name, ms in results:
        print(f"{name:<{width}}  {ms:8.2f} ms")


if __name__ == "__main__":
    main()
