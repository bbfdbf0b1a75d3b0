"""The test oracle: the agreement report recomputed with the trusted libraries
(scikit-learn, statsmodels, krippendorff, nltk) and slow, obviously-correct loops where no
library computes the number. Undefined values (a library's NaN, ValueError or
ZeroDivisionError) become None."""

from __future__ import annotations

import math
import warnings
from itertools import combinations

import krippendorff
import numpy as np
import pandas as pd
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import masi_distance as nltk_masi_distance
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa


def undefined_to_none(compute):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = float(compute())
    except (ValueError, ZeroDivisionError):
        return None
    return None if math.isnan(value) else value


def masi_reference(a: frozenset, b: frozenset) -> float:
    """MASI distance as AGREEMENT.md defines it (Passonneau 2006), one pair at a time."""
    if not a and not b:
        return 0.0
    jaccard = len(a & b) / len(a | b)
    if a == b:
        monotonicity = 1.0
    elif a <= b or b <= a:
        monotonicity = 2 / 3
    elif a & b:
        monotonicity = 1 / 3
    else:
        monotonicity = 0.0
    return 1.0 - jaccard * monotonicity


def nltk_masi_fixed(a, b):
    # nltk's masi_distance divides by zero on two empty sets; the contract says 0
    return 0.0 if not a and not b else nltk_masi_distance(a, b)


def alpha_reference(units: list[list], distance) -> float | None:
    """Krippendorff's alpha, straight from the definition: units = the values on each card."""
    pairable = [u for u in units if len(u) >= 2]
    n = sum(len(u) for u in pairable)
    if n == 0:
        return None
    observed = 0.0
    for u in pairable:
        for i, a in enumerate(u):
            for j, b in enumerate(u):
                if i != j:
                    observed += distance(a, b) / (len(u) - 1)
    values = [v for u in pairable for v in u]
    expected = 0.0
    for i, a in enumerate(values):
        for j, b in enumerate(values):
            if i != j:
                expected += distance(a, b)
    expected /= n - 1
    if expected == 0:
        return None
    return 1 - observed / expected


def masi_alpha_nltk(data: dict, distance) -> float | None:
    """nltk's alpha, None where nltk returns its convention of 1 for a single value (the
    contract says 0/0 is null) or has no pairable card."""
    triples = [(ann, str(card), labels) for (card, ann), labels in data.items()]
    by_card: dict = {}
    for (card, _), labels in data.items():
        by_card.setdefault(card, []).append(labels)
    pairable_values = {v for u in by_card.values() if len(u) >= 2 for v in u}
    if len(pairable_values) <= 1:
        return None
    return undefined_to_none(lambda: AnnotationTask(data=triples, distance=distance).alpha())


def library_report(records: pd.DataFrame, codes: list[str], consensus=None) -> dict:
    data = {(r.card, r.annotator): frozenset(r.labels) for r in records.itertuples()}
    cards = list(dict.fromkeys(records["card"]))
    annotators = sorted(set(records["annotator"]))
    set_code: dict[frozenset, int] = {}
    for labels in data.values():
        set_code.setdefault(labels, len(set_code))

    def binary(labels, code):
        return int(code in labels)

    out: dict = {
        "n_cards": len(cards),
        "n_annotators": len(annotators),
        "n_annotations": len(records),
    }
    on_card = {c: [data[(c, a)] for a in annotators if (c, a) in data] for c in cards}
    pairable = [c for c in cards if len(on_card[c]) >= 2]
    out["n_pairable_cards"] = len(pairable)

    members = {}
    for g, a in zip(records["group"], records["annotator"], strict=True):
        members.setdefault(g, set()).add(a)
    pairs_of_group = {g: list(combinations(sorted(ms), 2)) for g, ms in sorted(members.items())}
    all_pairs = sorted({p for ps in pairs_of_group.values() for p in ps})

    pairs = {}
    for a, b in all_pairs:
        common = [c for c in cards if (c, a) in data and (c, b) in data]
        x = [data[(c, a)] for c in common]
        y = [data[(c, b)] for c in common]
        n = len(common)
        p = {"n_common_cards": n}
        p["percent_agreement"] = (sum(u == v for u, v in zip(x, y, strict=True)) / n) if n else None
        p["cohen_kappa"] = (
            undefined_to_none(
                lambda x=x, y=y: cohen_kappa_score(
                    [set_code[s] for s in x], [set_code[s] for s in y]
                )
            )
            if n
            else None
        )
        p["pabak"] = (
            (2 ** len(codes) * p["percent_agreement"] - 1) / (2 ** len(codes) - 1) if n else None
        )
        per_label, pabak, ac1 = {}, {}, {}
        for code in codes:
            bx = [binary(s, code) for s in x]
            by = [binary(s, code) for s in y]
            per_label[code] = (
                undefined_to_none(lambda bx=bx, by=by: cohen_kappa_score(bx, by)) if n else None
            )
            if n:
                po = sum(u == v for u, v in zip(bx, by, strict=True)) / n
                q = (sum(bx) + sum(by)) / (2 * n)
                pe = 2 * q * (1 - q)
                pabak[code], ac1[code] = 2 * po - 1, (po - pe) / (1 - pe)
            else:
                pabak[code] = ac1[code] = None
        p["per_label_kappa"] = per_label
        defined = [v for v in per_label.values() if v is not None]
        p["per_label_kappa_macro"] = float(np.mean(defined)) if defined else None
        p["per_label_kappa_macro_n_defined"] = len(defined)
        flat_x = [binary(s, code) for code in codes for s in x]
        flat_y = [binary(s, code) for code in codes for s in y]
        p["per_label_kappa_micro"] = (
            undefined_to_none(lambda fx=flat_x, fy=flat_y: cohen_kappa_score(fx, fy))
            if n and codes
            else None
        )
        p["per_label_pabak"] = pabak
        p["per_label_ac1"] = ac1
        pairs[f"{a}|{b}"] = p
    out["pairs"] = pairs

    def means(members):
        res = {}
        for key in (
            "cohen_kappa",
            "percent_agreement",
            "per_label_kappa_macro",
            "per_label_kappa_micro",
        ):
            vals = [pairs[f"{a}|{b}"][key] for a, b in members]
            vals = [v for v in vals if v is not None]
            res[key] = float(np.mean(vals)) if vals else None
        return res

    out["group_mean"] = means(all_pairs)
    out["groups"] = {g: means(ps) for g, ps in pairs_of_group.items()}

    def all_same(values):
        return all(v == values[0] for v in values)

    out["percent_agreement_all"] = (
        float(np.mean([all_same(on_card[c]) for c in pairable])) if pairable else None
    )
    pairwise = []
    for c in pairable:
        ps = list(combinations(on_card[c], 2))
        pairwise.append(sum(u == v for u, v in ps) / len(ps))
    out["mean_pairwise_percent_agreement"] = float(np.mean(pairwise)) if pairwise else None

    def matrix(value):
        return np.array(
            [
                [value(data[(c, a)]) if (c, a) in data else np.nan for c in cards]
                for a in annotators
            ],
            dtype=float,
        )

    def kripp(reliability):
        return undefined_to_none(
            lambda: krippendorff.alpha(reliability_data=reliability, level_of_measurement="nominal")
        )

    out["krippendorff_alpha_nominal"] = kripp(matrix(lambda s: set_code[s]))
    out["krippendorff_alpha_nominal_per_label"] = {
        code: kripp(matrix(lambda s, code=code: binary(s, code))) for code in codes
    }
    out["krippendorff_alpha_masi"] = alpha_reference(list(on_card.values()), masi_reference)

    complete = [c for c in cards if len(on_card[c]) == len(annotators)]
    out["n_complete_cards"] = len(complete)

    def fleiss(value, subset):
        table = np.array([[value(data[(c, a)]) for a in annotators] for c in subset])
        return undefined_to_none(lambda: fleiss_kappa(aggregate_raters(table)[0]))

    enough = len(annotators) >= 3
    is_complete = enough and len(complete) == len(cards) and cards
    out["fleiss_kappa"] = fleiss(lambda s: set_code[s], cards) if is_complete else None
    per_label = {
        code: (fleiss(lambda s, code=code: binary(s, code), cards) if is_complete else None)
        for code in codes
    }
    out["fleiss_kappa_per_label"] = per_label
    defined = [v for v in per_label.values() if v is not None]
    out["fleiss_kappa_per_label_macro"] = float(np.mean(defined)) if defined else None
    out["fleiss_kappa_per_label_macro_n_defined"] = len(defined)
    out["fleiss_kappa_complete_cards"] = (
        fleiss(lambda s: set_code[s], complete) if enough and complete else None
    )
    if consensus:
        out["prevalence"] = {
            code: sum(code in set(v) for v in consensus.values()) / len(consensus) for code in codes
        }
    else:
        out["prevalence"] = dict.fromkeys(codes)
    return out


LABEL_DICTS = {
    "per_label_kappa",
    "per_label_pabak",
    "per_label_ac1",
    "krippendorff_alpha_nominal_per_label",
    "fleiss_kappa_per_label",
    "prevalence",
    "precision",
    "recall",
    "f1",
}


def assert_matches(ours, oracle, path="report", tol=1e-9, label_dict=False):
    """Every key of the oracle equals ours (numbers to `tol`, None to None with a reason),
    and ours has no keys beyond the oracle's, `_reason` siblings and confidence intervals."""
    if isinstance(oracle, dict):
        assert isinstance(ours, dict), path
        for key, value in oracle.items():
            assert key in ours, f"{path}.{key} missing"
            assert_matches(ours[key], value, f"{path}.{key}", tol, key in LABEL_DICTS)
            if label_dict:
                continue
            if value is None:
                assert isinstance(ours.get(f"{key}_reason"), str), f"{path}.{key}: null, no reason"
            elif key in LABEL_DICTS:
                reasons = ours.get(f"{key}_reason", {})
                assert {k for k, v in value.items() if v is None} == set(reasons), path
                assert all(isinstance(r, str) for r in reasons.values()), path
        extra = {
            k
            for k in ours
            if k not in oracle and not k.endswith("_reason") and not k.endswith("_ci")
        }
        assert not extra, f"{path}: unexpected keys {extra}"
    elif oracle is None:
        assert ours is None, f"{path}: expected null, got {ours!r}"
    elif isinstance(oracle, bool) or isinstance(oracle, int) and not isinstance(oracle, float):
        assert ours == oracle, f"{path}: {ours!r} != {oracle!r}"
    else:
        assert ours is not None, f"{path}: null, expected {oracle!r}"
        assert abs(ours - oracle) <= tol, f"{path}: {ours!r} != {oracle!r}"
