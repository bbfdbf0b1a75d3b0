"""Detector benchmark: the four rule-based detectors (annotation/judges/detectors/) over
generated coding conversations, as a judge run calls them (`detect` over each conversation,
one detector after the other).

    .venv/bin/python benchmarks/detectors_bench.py [--turns 100000] [--seed 0]

The conversations (seeded) have 3 to 10 turns; a reply is prose around one or two fenced
blocks of a program of 15 to 60 lines (Python most often, then JavaScript, Java, C++, Go,
Rust, SQL) that evolves turn by turn: lines edited, added and removed, sometimes a listing
repeated, an older version brought back, a banned library imported, an earlier function
called with one argument too many; some replies are prose only, some user messages paste
code or a traceback, ban a library or lift the ban. Aim: all four over 100,000 turns in
under 60 s on this machine (its load average is printed: 2 cores shared, figures vary).

Prints per detector: turns judged (applies) and flagged (score >= 0.5), wall and CPU
seconds, turns/s; the total; and the floor, the time to merely scan every message's
fences and split its text into words (a pass that reads every character once), with each
time's ratio to it.
No database, no Django."""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation.judges.detectors import REGISTRY, TurnView, detect  # noqa: E402
from annotation.judges.detectors import code as detector_code  # noqa: E402

AIM_SECONDS = 60.0
WORDS = "total count items value result index buffer config request response user data".split()
LIBS = ["numpy", "pandas", "requests", "lodash", "axios", "guava", "regex", "tokio"]
LANGS = ["python"] * 5 + ["javascript", "javascript", "java", "cpp", "go", "rust", "sql"]

PROSE = [
    "Here is the updated version. I changed the part that handled the input.",
    "Sure! Below is the complete code with the fix applied.",
    "The problem was in the loop: it read one element too far.",
    "This should work now. Let me know if anything else comes up.",
]
REQUESTS = [
    "Fix the crash on empty input.",
    "Can you add logging to it?",
    "It still fails with the same error.",
    "Thanks! What does the second function do?",
    "Rename the variables to something clearer.",
    "Make it faster, it is too slow on big files.",
    "Why does it use a dictionary here?",
    "Please add error handling for the network calls.",
    "Go back to the previous version, this one is worse.",
]


def ident(rng: random.Random) -> str:
    return rng.choice(WORDS) + str(rng.randint(0, 9))


def python_line(rng: random.Random, funcs: list[tuple[str, int]]) -> str:
    if funcs and rng.random() < 0.3:
        name, arity = rng.choice(funcs)
        args = ", ".join(ident(rng) for _ in range(arity))
        return f"    {ident(rng)} = {name}({args})"
    a, b, c = ident(rng), ident(rng), ident(rng)
    return rng.choice(
        [
            f"    {a} = {b} + {rng.randint(0, 99)}  # {c}",
            f"    if {a} > {b}:\n        {c} = {a} - {b}",
            f"    for {a} in {b}:\n        {c}.append({a})",
            f'    print(f"{a}: {{{b}}}")',
        ]
    )


def c_line(rng: random.Random, lang: str) -> str:
    a, b, c = ident(rng), ident(rng), ident(rng)
    typed = {"go": f"{a} := ", "rust": f"let {a} = ", "javascript": f"const {a} = "}
    prefix = typed.get(lang, f"int {a} = ")
    return rng.choice(
        [
            f"    {prefix}{b}({c}, {rng.randint(0, 99)}); // {c}",
            f"    if ({a} > {b}) {{ {c} = {a}; }}",
            f"    {a} = {a} + {b}; /* {c} */",
        ]
    )


def sql_line(rng: random.Random) -> str:
    a, b = ident(rng), ident(rng)
    return rng.choice(
        [f"  AND {a} > {rng.randint(0, 99)}", f"  -- {a}\n  OR {b} IS NULL", f"  AND {a} = {b}"]
    )


class Program:
    """One conversation's program: functions of lines, edited turn by turn."""

    def __init__(self, rng: random.Random, lang: str) -> None:
        self.rng, self.lang = rng, lang
        self.funcs: list[tuple[str, int]] = []
        self.parts: list[list[str]] = []
        for _ in range(rng.randint(2, 5)):
            self.add_function()
        self.history: list[str] = []

    def line(self) -> str:
        if self.lang == "python":
            return python_line(self.rng, self.funcs)
        if self.lang == "sql":
            return sql_line(self.rng)
        return c_line(self.rng, self.lang)

    def add_function(self) -> None:
        rng = self.rng
        name, arity = f"{rng.choice(WORDS)}_{len(self.funcs)}", rng.randint(0, 3)
        params = ", ".join(f"p{i}" for i in range(arity))
        head = {
            "python": f"def {name}({params}):",
            "sql": f"SELECT {params or '*'} FROM {name} WHERE 1 = 1",
            "go": f"func {name}({params}) {{",
            "rust": f"fn {name}({params}) {{",
            "javascript": f"function {name}({params}) {{",
        }.get(self.lang, f"int {name}({params}) {{")
        body = [self.line() for _ in range(rng.randint(3, 10))]
        tail = {"python": [], "sql": [";"]}.get(self.lang, ["}"])
        self.parts.append([head, *body, *tail])
        self.funcs.append((name, arity))

    def edit(self) -> None:
        rng = self.rng
        for _ in range(rng.randint(1, 3)):
            part = rng.choice(self.parts)
            at = rng.randrange(1, max(2, len(part) - 1))
            op = rng.random()
            if op < 0.45:
                part[at] = self.line()
            elif op < 0.8:
                part.insert(at, self.line())
            elif len(part) > 3:
                del part[at]
        if rng.random() < 0.1:
            self.add_function()

    def check(self) -> str:
        """A line that uses the program: in Python a call of one of its functions, one
        argument too many once in twenty."""
        if self.lang != "python":
            return self.line().strip()
        name, arity = self.rng.choice(self.funcs)
        n = arity + (self.rng.random() < 0.05)
        return f"print({name}({', '.join(['1'] * n)}))"

    def text(self, imports: list[str]) -> str:
        head = {
            "python": [f"import {lib}" for lib in imports],
            "javascript": [f"const {lib} = require('{lib}');" for lib in imports],
            "java": [f"import com.{lib}.Core;" for lib in imports],
            "cpp": [f"#include <{lib}>" for lib in imports],
            "go": [f'import "{lib}"' for lib in imports],
            "rust": [f"use {lib}::prelude::*;" for lib in imports],
        }.get(self.lang, [])
        return "\n".join(head + [""] + ["\n".join(p) + "\n" for p in self.parts])


def conversation(rng: random.Random, n: int) -> list[TurnView]:
    lang = rng.choice(LANGS)
    program = Program(rng, lang)
    banned = rng.choice(LIBS) if rng.random() < 0.2 else None
    turns = []
    versions: list[str] = []
    for index in range(n):
        user = rng.choice(REQUESTS)
        if banned and index == 0:
            user += f" Don't use {banned}."
        if rng.random() < 0.1:
            user += "\n\n```\nTraceback (most recent call last):\n  ValueError: bad value\n```"
        roll = rng.random()
        if index and roll < 0.15:
            reply = rng.choice(PROSE)  # prose only
        else:
            if roll < 0.25 and versions:
                body = versions[-1]  # the same listing again
            elif roll < 0.3 and len(versions) > 1:
                body = rng.choice(versions[:-1])  # an older version back
            else:
                if index:
                    program.edit()
                imports = [banned] if banned and rng.random() < 0.2 else []
                body = program.text(imports)
            versions.append(body)
            blocks = f"```{lang}\n{body}```"
            if rng.random() < 0.3:
                blocks += f"\n\nAnd a quick check:\n\n```{lang}\n{program.check()}\n```"
            reply = f"{rng.choice(PROSE)}\n\n{blocks}\n\n{rng.choice(PROSE)}"
        turns.append(TurnView(index, user, reply))
    return turns


def generate(total: int, seed: int) -> list[list[TurnView]]:
    rng = random.Random(seed)
    conversations, made = [], 0
    while made < total:
        n = min(rng.randint(3, 10), total - made)
        conversations.append(conversation(rng, n))
        made += n
    return conversations


def floor_pass(conversations: list[list[TurnView]]) -> tuple[float, float]:
    """Scan every message's fences and split its text into words, uncached: wall and cpu
    seconds."""
    scan = detector_code.blocks.__wrapped__
    start, cpu = time.perf_counter(), time.process_time()
    for turns in conversations:
        for turn in turns:
            for text in (turn.user, turn.reply):
                scan(text)
                text.split()
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    load_before = os.getloadavg()
    started = time.perf_counter()
    conversations = generate(args.turns, args.seed)
    generated = time.perf_counter() - started
    turns = sum(len(c) for c in conversations)
    chars = sum(len(t.user) + len(t.reply) for c in conversations for t in c)
    print(
        f"{turns} turns in {len(conversations)} conversations ({chars / 1e6:.1f} M characters),"
        f" seed {args.seed}, generated in {generated:.1f} s"
    )
    floor, floor_cpu = floor_pass(conversations)
    print(f"floor (scan fences + split words): {floor:8.2f} s, cpu {floor_cpu:.2f} s")

    total = cpu_total = 0.0
    print(
        f"  {'detector':<22} {'judged':>8} {'flagged':>8} {'seconds':>8} {'cpu s':>7}"
        f" {'turns/s':>9} ratio"
    )
    for name, detector in sorted(REGISTRY.items()):
        detector_code.blocks.cache_clear()  # each detector pays for its own reading
        start, cpu_start = time.perf_counter(), time.process_time()
        judged = flagged = 0
        for conv in conversations:
            for _, score, _ in detect(detector, conv):
                judged += 1
                flagged += score >= 0.5
        spent, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        total += spent
        cpu_total += cpu
        print(
            f"  {name + '@' + detector.version:<22} {judged:>8} {flagged:>8} {spent:>8.2f}"
            f" {cpu:>7.2f} {turns / spent:>9.0f} {spent / floor:5.1f}x"
        )
    load_after = os.getloadavg()
    print(
        f"all four: {total:.2f} s wall, {cpu_total:.2f} s cpu ({turns / total:.0f} turns/s),"
        f" {total / floor:.1f}x the floor (cpu {cpu_total / max(floor_cpu, 1e-9):.1f}x)"
    )
    print(f"aim: all four over 100,000 turns < {AIM_SECONDS:.0f} s")
    print(
        f"load average (1 min) before {load_before[0]:.2f}, after {load_after[0]:.2f}"
        f" on {os.cpu_count()} cores (wall time stretches with the load; cpu time less so)"
    )


if __name__ == "__main__":
    main()
