"""The backup's list of a study's models is the model graph's: a model that reaches Study
(directly or through other models, many-to-many tables too) and is not handled by
dump_study/load_study fails here."""

from annotation.backup import graph


def test_every_model_that_reaches_study_is_backed_up():
    discovered = graph.discovered_study_models()
    listed = set(graph.STUDY_MODELS)
    assert discovered - listed == set(), "models of a study that the backup does not handle"
    assert listed - discovered == set(), "models the backup lists that are not a study's"


def test_load_order_puts_required_references_first():
    """load_study inserts models in STUDY_MODELS' order: a required reference must point at
    a model already in (a nullable one is set at the end)."""
    order = {label: i for i, label in enumerate(graph.STUDY_MODELS)}
    for label in graph.STUDY_MODELS:
        for f in graph.fields(graph.model(label)):
            target = graph.label(f.related_model) if f.is_relation else None
            if target in order and not f.null:
                assert order[target] < order[label], f"{label}.{f.name} -> {target}"


def test_every_row_is_reached_through_required_references():
    for label in graph.STUDY_MODELS:
        path = graph.scope_path(label)
        assert path == "pk" or path.endswith("study"), (label, path)
