"""An episode's labels: {axis code: [type codes]} on the study's taxonomy, checked like a
card's (each code a type of that axis, the axis's selection limit, the axis's condition:
Axis.when)."""

from __future__ import annotations

from taxonomy.models import TaxonomyVersion, when_error


def axes_of(version: TaxonomyVersion) -> dict[str, dict]:
    """{axis code: {"codes": set of its type codes, "limit": max types or None, "name",
    "when": its condition}}."""
    axes: dict[str, dict] = {}
    for axis in version.axes.prefetch_related("types"):
        limit = axis.max_labels if axis.multi_select else 1
        axes[axis.code] = {
            "codes": {t.code for t in axis.types.all()},
            "limit": limit,
            "name": axis.name,
            "when": axis.when or {},
        }
    return axes


def check_labels(value: object, axes: dict[str, dict], where: str = "labels") -> dict:
    """The labels as stored ({axis: [codes]} in the order given, no duplicates, axes
    without codes left out); ValueError naming the field (`labels.cause`) otherwise. A
    single code may be given as a string."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{where}: must be an object {{axis: [type codes]}}, got {value!r}")
    out: dict[str, list[str]] = {}
    for axis, codes in value.items():
        if axis not in axes:
            raise ValueError(f"{where}: unknown axis {axis!r} (axes: {', '.join(axes)})")
        if isinstance(codes, str):
            codes = [codes]
        if not isinstance(codes, list):
            raise ValueError(f"{where}.{axis}: must be a list of type codes, got {codes!r}")
        kept: list[str] = []
        for i, code in enumerate(codes):
            if not isinstance(code, str) or code not in axes[axis]["codes"]:
                raise ValueError(f"{where}.{axis}[{i}]: unknown type code {code!r} of axis {axis}")
            if code not in kept:
                kept.append(code)
        limit = axes[axis]["limit"]
        if limit and len(kept) > limit:
            raise ValueError(
                f"{where}.{axis}: at most {limit} type(s), got {len(kept)} ({', '.join(kept)})"
            )
        if kept:
            out[axis] = kept
    names = {code: a.get("name", code) for code, a in axes.items()}
    for axis in out:
        when = axes[axis].get("when")
        problem = when and when_error(axis, names[axis], when, out, names)
        if problem:
            raise ValueError(f"{where}.{axis}: {problem}")
    return out
