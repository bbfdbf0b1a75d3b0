"""Sample size and sampling: how many conversations a study needs, and the reproducible draw
that makes them the study's conversation set (`manage.py sample_size`, `manage.py sample`,
the lead's sample page).

Sample size is Cochran's formula with the finite population correction, rounded up:

    n0 = z^2 p (1 - p) / e^2            (an infinite population)
    n  = n0 / (1 + (n0 - 1) / N)        = z^2 N p (1 - p) / (e^2 (N - 1) + z^2 p (1 - p))

The second form is Krejcie and Morgan's (1970), with their chi-square for one degree of
freedom in place of z^2. Their table is that formula with chi-square = 3.841 (1.96^2,
rounded) and rounded to the nearest integer, not up: it matches all of its 95 entries that
way (tests/intake/test_sample_size.py). We take z from the normal distribution
(`statistics.NormalDist`, 1.959964 for 95%) and round up, as Cochran does, so that the margin
is never exceeded; that gives 383 for 81,366 and the table's 80 for 100, 377 for 20,000 and
384 for 1,000,000, and one more than the table in 47 of its 95 entries: 45 where the table
rounded down (for 15 it says 14, from 14.47), and 2 where z^2 = 3.84146 instead of 3.841
lifts the value a hair above an integer (210: 136.0047, 4500: 354.0047).

The draw: the population is the study's conversations in the set (`set_aside == ""`) with at
least `min_turns` turns, sorted in Python by a stable key (source file, line, external id,
split position, fingerprint), never by database id or the database's collation, so the same
seed draws the same conversations on SQLite and PostgreSQL and after a re-import. With
strata, each stratum gets its proportional share by the largest remainder method (Hamilton's):
the floor of n * N_k / N, and the units left over go to the strata with the largest
remainders (ties: the stratum's name), so every stratum is within one conversation of its
proportional share. The draw in each stratum, in the order of the strata's names, uses one
`random.Random(seed)`.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from django.db import transaction

# What a draw may be stratified by, and how the methods paragraph names it.
STRATA = {"source": "source format", "language": "language", "turns": "number of turns"}
# Buckets of the number of turns: (lowest, highest or None, name).
TURN_BUCKETS = ((1, 1, "1"), (2, 2, "2"), (3, 4, "3-4"), (5, 9, "5-9"), (10, None, "10+"))
UNKNOWN_LANGUAGE = "unknown"
# Spellings of "no language detected" (LMSYS `unknown`, WildChat `Nolang`), as in browse.py.
NO_LANGUAGE = {"", "unknown", "nolang"}
# UPDATE ... WHERE pk IN (...) in batches: SQLite limits the parameters of one statement.
BATCH = 500


class SamplingRefused(ValueError):
    """A draw that would lose or confuse work, or cannot be made; the message says why."""


# -- sample size ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleSize:
    """The formula's inputs and its result, as `manage.py sample_size` and the page show them."""

    population: int
    confidence: float
    margin: float
    proportion: float
    z: float
    infinite: float  # n0, the size for an infinite population
    exact: float  # n before rounding up
    n: int

    @property
    def infinite_n(self) -> int:
        return _ceil(self.infinite)


def _ceil(x: float) -> int:
    # round(.., 9) first: a float a hair above an integer (80.00000000001) is that integer
    return math.ceil(round(x, 9))


def z_value(confidence: float) -> float:
    """The two-sided normal quantile: 1.959964 for 95%."""
    return NormalDist().inv_cdf(1 - (1 - confidence) / 2)


def _check_inputs(population: int, confidence: float, margin: float, proportion: float) -> None:
    if isinstance(population, bool) or not isinstance(population, int) or population < 0:
        raise ValueError(f"population must be a whole number of 0 or more, got {population!r}")
    for name, value in (("confidence", confidence), ("margin", margin), ("proportion", proportion)):
        if not (isinstance(value, int | float) and 0 < value < 1):
            raise ValueError(f"{name} must be between 0 and 1 (both excluded), got {value!r}")


def size_for(
    population: int, confidence: float = 0.95, margin: float = 0.05, proportion: float = 0.5
) -> SampleSize:
    _check_inputs(population, confidence, margin, proportion)
    z = z_value(confidence)
    infinite = z * z * proportion * (1 - proportion) / (margin * margin)
    # n0 N / (n0 + N - 1): the correction written without dividing by N (N = 0 gives 0)
    exact = infinite * population / (infinite + population - 1) if population else 0.0
    n = min(_ceil(exact), population)
    return SampleSize(population, confidence, margin, proportion, z, infinite, exact, n)


def sample_size(
    population: int, confidence: float = 0.95, margin: float = 0.05, proportion: float = 0.5
) -> int:
    """Cochran's sample size with the finite population correction, rounded up."""
    return size_for(population, confidence, margin, proportion).n


def percent(x: float) -> str:
    """0.95 -> "95%", 0.035 -> "3.5%" (no float noise)."""
    return f"{round(x * 100, 6):g}%"


def describe(size: SampleSize) -> list[str]:
    """The formula with its inputs, one line each (the command prints them)."""
    return [
        f"Sample size: {size.n:,}",
        f"  population N = {size.population:,}",
        f"  confidence {percent(size.confidence)}: z = {size.z:.6f}",
        f"  margin e = {size.margin:g} (±{percent(size.margin)}), "
        f"proportion p = {size.proportion:g}",
        f"  infinite population: n0 = z^2 p (1 - p) / e^2 = {size.infinite:.4f}",
        f"  finite population correction: n = n0 / (1 + (n0 - 1) / N) = {size.exact:.4f}",
        f"  rounded up: {size.n:,}",
    ]


# -- strata ---------------------------------------------------------------------------------


def turns_bucket(n_turns: int) -> str:
    for low, high, name in TURN_BUCKETS:
        if n_turns >= low and (high is None or n_turns <= high):
            return name
    return "0"


def language_of(metadata_language: object) -> str:
    value = str(metadata_language or "").strip().lower()
    return UNKNOWN_LANGUAGE if value in NO_LANGUAGE else value


def parse_stratify(text: str | Sequence[str]) -> list[str]:
    """Names from "source,language"; an unknown name is refused by name."""
    names = [s.strip() for s in text.split(",")] if isinstance(text, str) else list(text)
    names = [s for s in names if s]
    unknown = [s for s in names if s not in STRATA]
    if unknown:
        raise ValueError(
            f"cannot stratify by {', '.join(unknown)}: choose from {', '.join(STRATA)}"
        )
    if len(set(names)) != len(names):
        raise ValueError(f"a stratum is named twice in {','.join(names)}")
    return names


def allocate(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """Proportional allocation of `n` over strata of these sizes, by the largest remainder:
    each stratum gets floor(n * N_k / N) and the rest go one each to the largest remainders
    (ties: by name). Integer arithmetic, so nothing depends on float rounding."""
    total = sum(sizes.values())
    if not 0 <= n <= total:
        raise ValueError(f"cannot draw {n} from {total}")
    if total == 0:
        return {k: 0 for k in sizes}
    quota = {k: n * size // total for k, size in sizes.items()}
    left = n - sum(quota.values())
    by_remainder = sorted(sizes, key=lambda k: (-(n * sizes[k] % total), k))
    for k in by_remainder[:left]:
        quota[k] += 1
    return quota


# -- the draw (pure) ------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One conversation of the population: its stable sort key, id and stratum."""

    key: tuple
    pk: int
    stratum: str = ""


def draw(units: Iterable[Unit], n: int, seed: int) -> tuple[list[int], dict[str, dict]]:
    """The ids of `n` units drawn with `seed`, and per stratum {population, drawn} (empty when
    every unit has the stratum ""). Depends only on the units' keys and strata, never on
    their ids or the order they come in."""
    ordered = sorted(units, key=lambda u: (u.key, u.pk))
    if not 0 <= n <= len(ordered):
        raise ValueError(f"asked for {n} conversations, the population has {len(ordered)}")
    members: dict[str, list[Unit]] = defaultdict(list)
    for unit in ordered:
        members[unit.stratum].append(unit)
    quota = allocate({k: len(v) for k, v in members.items()}, n)
    rng = random.Random(seed)
    chosen: list[int] = []
    for name in sorted(members):
        chosen += [u.pk for u in rng.sample(members[name], quota[name])]
    strata = {
        name: {"population": len(members[name]), "drawn": quota[name]} for name in sorted(members)
    }
    return chosen, ({} if set(members) <= {""} else strata)


def stratum_name(values: Mapping[str, str], stratify: Sequence[str]) -> str:
    return ", ".join(f"{s}={values[s]}" for s in stratify)


# -- the methods paragraph ------------------------------------------------------------------


def _names_joined(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def methods_paragraph(sample) -> str:
    """What was drawn, from the stored Sample: "383 of 81,366 conversations (95% confidence,
    ±5% margin, p = 0.5), drawn with seed 7." plus min turns and strata when used."""
    what = f"{sample.n:,} of {sample.population:,} conversations"
    if sample.min_turns > 1:
        what += f" with at least {sample.min_turns} turns"
    if sample.confidence is not None:
        size = size_for(sample.population, sample.confidence, sample.margin, sample.proportion)
        params = (
            f"{percent(sample.confidence)} confidence, ±{percent(sample.margin)} margin, "
            f"p = {sample.proportion:g}"
        )
        if sample.n == size.n:
            what += f" ({params})"
        else:
            what += f" (Cochran's formula gives {size.n:,} for {params})"
    text = f"{what}, drawn at random with seed {sample.seed}"
    if sample.stratify:
        by = [STRATA[s] for s in sample.stratify]
        if "turns" in sample.stratify:
            buckets = ", ".join(name for _, _, name in TURN_BUCKETS)
            by[sample.stratify.index("turns")] += f" (buckets {buckets})"
        text += (
            f", stratified by {_names_joined(by)} with proportional allocation over "
            f"{len(sample.strata):,} strata (largest remainder)"
        )
    return text + "."


def strata_lines(sample) -> list[str]:
    """The strata as text lines, "stratum: drawn of population", by name (PostgreSQL's jsonb
    keeps keys in its own order, shortest first)."""
    return [
        f"{name}: {counts['drawn']:,} of {counts['population']:,}"
        for name, counts in sorted(sample.strata.items())
    ]


# -- the draw in the database ---------------------------------------------------------------


def _examples(ids: list[str]) -> str:
    shown = ", ".join(ids[:5])
    return shown + (f" and {len(ids) - 5:,} more" if len(ids) > 5 else "")


def _refuse_if_in_use(conversations) -> None:
    """A conversation assigned to a group (or with labels) must not leave the set: its
    annotators' work would disappear from their queues."""
    from ..models import Annotation

    assigned = list(
        conversations.filter(assignments__isnull=False)
        .order_by("key")
        .values_list("key", flat=True)
        .distinct()
    )
    if assigned:
        raise SamplingRefused(
            f"{len(assigned):,} conversations of the study's set are already assigned to "
            f"groups ({_examples(assigned)}): draw the sample before assigning, nothing was "
            f"changed"
        )
    if Annotation.objects.filter(turn__conversation__in=conversations).exists():
        raise SamplingRefused(
            "conversations of the study's set already have labels: nothing was changed"
        )


def _units(conversations, stratify: Sequence[str]) -> list[Unit]:
    fields = ["pk", "source_file", "source_line", "external_id", "split_first_turn"]
    fields += ["fingerprint", "source_format", "n_turns"]
    rows = conversations.values_list(*fields, "metadata__language")
    units = []
    for pk, file, line, ext, first, fingerprint, fmt, n_turns, lang in rows:
        values = {"source": fmt, "language": language_of(lang), "turns": turns_bucket(n_turns)}
        key = (file, -1 if line is None else line, ext, first or 0, fingerprint)
        units.append(Unit(key, pk, stratum_name(values, stratify)))
    return units


def _set_aside(ids: list[int], value: str) -> None:
    from ..models import Conversation

    for i in range(0, len(ids), BATCH):
        Conversation.objects.filter(pk__in=ids[i : i + BATCH]).update(set_aside=value)


def draw_sample(
    study,
    *,
    n: int | None,
    seed: int,
    stratify: Sequence[str] = (),
    min_turns: int = 1,
    replace: bool = False,
    confidence: float | None = None,
    margin: float | None = None,
    proportion: float | None = None,
    by=None,
):
    """Draw the study's conversation set: the conversations not drawn (and those with fewer
    than `min_turns` turns) are set aside as SetAside.SAMPLE, kept as the population.
    `n` None: Cochran's size for the confidence and margin. Refuses (SamplingRefused, nothing
    changed) when the study has a sample and not `replace` (then the earlier set is restored
    first), when conversations are assigned or labelled, or when n exceeds the population."""
    from ..models import Conversation, Sample, SetAside, Study

    if min_turns < 1:
        raise SamplingRefused(f"--min-turns must be 1 or more, got {min_turns}")
    stratify = parse_stratify(stratify)
    sized = n is None or confidence is not None or margin is not None or proportion is not None
    if sized:
        confidence = 0.95 if confidence is None else confidence
        margin = 0.05 if margin is None else margin
        proportion = 0.5 if proportion is None else proportion
        _check_inputs(0, confidence, margin, proportion)
    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=study.pk)
        earlier = study.samples.first()
        if earlier is not None and not replace:
            raise SamplingRefused(
                f"study {study.slug} already has a sample ({earlier.n:,} of "
                f"{earlier.population:,}, seed {earlier.seed}, {earlier.created_at:%Y-%m-%d}): "
                f"pass --replace to draw anew (the earlier set is restored first)"
            )
        mine = Conversation.objects.filter(study=study)
        unfinished = mine.under_way()
        if unfinished.exists():
            job = unfinished.values_list("import_job_id", flat=True).first()
            raise SamplingRefused(
                f"study {study.slug} has {unfinished.count():,} conversations of an import "
                f"that is not done (job {job}): draw the sample when it has finished"
            )
        touched = mine.filter(set_aside__in=[SetAside.NO, SetAside.SAMPLE] if replace else [""])
        _refuse_if_in_use(touched)
        if replace:
            mine.filter(set_aside=SetAside.SAMPLE).update(set_aside=SetAside.NO)
        in_set = mine.filter(set_aside=SetAside.NO)
        population = in_set.filter(n_turns__gte=min_turns)
        units = _units(population, stratify)
        if sized:
            needed = size_for(len(units), confidence, margin, proportion).n
            if n is None:
                n = needed
            elif n < needed:
                raise SamplingRefused(
                    f"--n {n:,} is below the {needed:,} that {percent(confidence)} confidence "
                    f"and ±{percent(margin)} margin need for {len(units):,} conversations"
                )
        if n < 1 or n > len(units):
            raise SamplingRefused(
                f"cannot draw {n:,} conversations: the population (the study's set, with at "
                f"least {min_turns} turns) has {len(units):,}; nothing was changed"
            )
        chosen, strata = draw(units, n, seed)
        # one UPDATE sets the whole set aside, then the drawn come back (n/BATCH statements)
        short = in_set.count() - len(units)
        in_set.update(set_aside=SetAside.SAMPLE)
        _set_aside(chosen, SetAside.NO)
        sample = Sample(
            study=study,
            population=len(units),
            n=n,
            seed=seed,
            confidence=confidence,
            margin=margin,
            proportion=proportion,
            stratify=list(stratify),
            min_turns=min_turns,
            strata=strata,
            created_by=by,
        )
        sample.methods = methods_paragraph(sample)
        sample.save()
    sample.set_aside_short = short
    return sample
