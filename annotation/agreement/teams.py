"""Agreement per team (AGREEMENT.md, "teams[kind]"): the unweighted mean of the groups'
Cohen's kappa over the groups of one kind (expert, student), the groups whose kappa is
undefined left out and counted, so that a methods section reads "kappa per group, mean
0.82 (4 student groups)" and never mixes the kinds in one mean without naming it."""

from __future__ import annotations

from collections.abc import Mapping

NO_DEFINED_GROUP = "no group of this kind has a defined kappa"


def team_means(groups: Mapping[str, Mapping], kinds: Mapping[str, str]) -> dict[str, dict]:
    """{kind: {cohen_kappa_mean (or its _reason), n_groups, n_defined, groups, lowest,
    highest}} over `groups` (a report's groups: name -> its section with `cohen_kappa`),
    each group's kind from `kinds` (name -> kind); kinds in name order."""
    teams: dict[str, dict] = {}
    for name in sorted(groups):
        kind = kinds.get(name)
        if kind is None:
            continue  # a group gone since: no kind to count it under
        team = teams.setdefault(kind, {"groups": [], "kappas": []})
        team["groups"].append(name)
        kappa = groups[name].get("cohen_kappa")
        if kappa is not None:
            team["kappas"].append(kappa)
    out = {}
    for kind in sorted(teams):
        kappas = teams[kind]["kappas"]
        entry: dict = {
            "n_groups": len(teams[kind]["groups"]),
            "n_defined": len(kappas),
            "groups": teams[kind]["groups"],
        }
        if kappas:
            entry["cohen_kappa_mean"] = sum(kappas) / len(kappas)
            entry["lowest"], entry["highest"] = min(kappas), max(kappas)
        else:
            entry["cohen_kappa_mean"] = None
            entry["cohen_kappa_mean_reason"] = NO_DEFINED_GROUP
        out[kind] = entry
    return out
