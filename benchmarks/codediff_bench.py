"""Code-diff benchmark: the diff partial's work (annotation.codediff.diff_reply) on the last
turn of a long coding conversation, where every earlier reply holds code that evolves turn
by turn (a few lines changed, added or removed each time), so every earlier block is a
plausible match and the prefilter (real_quick_ratio, quick_ratio) has to earn its keep.

    .venv/bin/python benchmarks/codediff_bench.py [--turns 100] [--blocks 2] [--lines 60]
        [--repeat 5] [--seed 0]

Prints, the best of --repeat runs: the whole diff_reply (parse every reply, find the closest
block of each of the last reply's blocks, build both views), the parse alone, and how many
candidates the prefilter left for a full ratio(). No database, no Django."""

from __future__ import annotations

import argparse
import random
import sys
import time
from difflib import SequenceMatcher
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation import codediff  # noqa: E402

WORDS = "total count items value result index buffer config request response user".split()


def line(rng: random.Random) -> str:
    a, b, c = rng.sample(WORDS, 3)
    return f"    {a} = {b}({c}, {rng.randint(0, 99)})"


def conversation(turns: int, blocks: int, lines: int, seed: int) -> list[tuple[int, str]]:
    rng = random.Random(seed)
    code = [[f"def f{k}(x):"] + [line(rng) for _ in range(lines)] for k in range(blocks)]
    replies = []
    for index in range(1, turns + 1):
        for block in code:  # a few edits per turn
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(1, len(block))
                op = rng.random()
                if op < 0.5:
                    block[at] = line(rng)
                elif op < 0.75:
                    block.insert(at, line(rng))
                elif len(block) > 3:
                    del block[at]
        fences = "\n\n".join("```python\n" + "\n".join(b) + "\n```" for b in code)
        replies.append((index, f"Here is the new version (turn {index}).\n\n{fences}\n"))
    return replies


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--lines", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    replies = conversation(args.turns, args.blocks, args.lines, args.seed)
    *earlier, (last_index, last) = replies
    whole = best(lambda: codediff.diff_reply(last, last_index, earlier), args.repeat)
    parse = best(lambda: [codediff.code_blocks(r, i) for i, r in replies], args.repeat)

    # how many candidates reach a full ratio() in closest(): count the calls
    calls = 0
    ratio = SequenceMatcher.ratio

    def counting(self):
        nonlocal calls
        calls += 1
        return ratio(self)

    candidates = [b for i, r in earlier for b in codediff.code_blocks(r, i)]
    SequenceMatcher.ratio = counting
    try:
        for block in codediff.code_blocks(last, last_index):
            codediff.closest(block, candidates)
    finally:
        SequenceMatcher.ratio = ratio
    diffs = codediff.diff_reply(last, last_index, earlier)

    print(f"{args.turns} turns x {args.blocks} blocks of ~{args.lines} lines, seed {args.seed}")
    print(f"diff_reply (last turn, both views): {whole * 1000:8.1f} ms")
    print(f"  of which parsing every reply:     {parse * 1000:8.1f} ms")
    print(
        f"full ratio() calls: {calls} for {len(diffs)} blocks x {len(candidates)} candidates "
        f"({len(diffs) * len(candidates)} without the prefilter)"
    )
    for d in diffs:
        print(f"  block {d.block.position}: closest turn {d.earlier.turn}, {d.similarity:.0%}")


if __name__ == "__main__":
    main()
