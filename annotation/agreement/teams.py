"""Agreement per team (AGREEMENT.md, "teams[kind]"): the unweighted mean of the groups'
Cohen's kappa over the groups of one kind (expert, student), the groups whose kappa is
undefined left out and counted, so that a methods section reads "kappa per group, mean
0.82 (4 student groups)" and never mixes the kinds in one mean without naming it.

The same means per phase (`phases[phase]`: the groups' effective phase, open_sort or
closed_sort, when the report was computed). Beside the kappa's mean, the means of the
groups' percent agreement and per-label kappas (macro, micro), each over the groups where
it is defined (`<key>_mean`, null with `<key>_mean_reason` where no group has one); `n_defined`,
`lowest` and `highest` are the kappa's."""

from __future__ import annotations

from collections.abc import Mapping

NO_DEFINED_GROUP = "undefined: none of these groups has a defined kappa"
NO_DEFINED = "undefined: none of these groups has a defined value"
# the group means of the report (stats._MEAN_KEYS) a team averages
MEAN_KEYS = ("cohen_kappa", "percent_agreement", "per_label_kappa_macro", "per_label_kappa_micro")


def team_means(groups: Mapping[str, Mapping], kinds: Mapping[str, str]) -> dict[str, dict]:
    """{kind: {cohen_kappa_mean (or its _reason), n_groups, n_defined, groups, lowest,
    highest, and the means of MEAN_KEYS' others}} over `groups` (a report's groups: name ->
    its section with `cohen_kappa`), each group's kind from `kinds` (name -> kind; any
    partition of the groups, their phases too); kinds in name order."""
    members: dict[str, list[str]] = {}
    for name in sorted(groups):
        kind = kinds.get(name)
        if kind is None:
            continue  # a group gone since: no kind to count it under
        members.setdefault(kind, []).append(name)
    out = {}
    for kind in sorted(members):
        names = members[kind]
        kappas = [k for n in names if (k := groups[n].get("cohen_kappa")) is not None]
        entry: dict = {"n_groups": len(names), "n_defined": len(kappas), "groups": names}
        if kappas:
            entry["cohen_kappa_mean"] = sum(kappas) / len(kappas)
            entry["lowest"], entry["highest"] = min(kappas), max(kappas)
        else:
            entry["cohen_kappa_mean"] = None
            entry["cohen_kappa_mean_reason"] = NO_DEFINED_GROUP
        for key in MEAN_KEYS[1:]:
            values = [v for n in names if (v := groups[n].get(key)) is not None]
            entry[f"{key}_mean"] = sum(values) / len(values) if values else None
            if not values:
                entry[f"{key}_mean_reason"] = NO_DEFINED
        out[kind] = entry
    return out
