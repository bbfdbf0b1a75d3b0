"""References between rows of one model (a tag merged into an earlier or a later tag, in
the same batch of the load or another) land on the same rows after a load, whatever their
pattern: backward references inside the batch flush it first, forward ones are set at the
end (annotation/backup/block.py)."""

import io
import itertools

from django.core.management import call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.backup import block
from annotation.models import FreeTag
from tests.factories import make_study, make_user

counter = itertools.count()


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.one_of(st.none(), st.integers(0, 11)), min_size=1, max_size=12))
def test_merged_into_lands_on_the_same_tags(db, tmp_path, monkeypatch, targets):
    monkeypatch.setattr(block, "BATCH", 3)
    n = next(counter)
    study, user = make_study(f"p{n}"), make_user("tagger")
    tags = [
        FreeTag.objects.create(study=study, author=user, name=f"t{i}") for i in range(len(targets))
    ]
    for tag, target in zip(tags, targets, strict=True):
        if target is not None and target < len(tags):
            FreeTag.objects.filter(pk=tag.pk).update(merged_into=tags[target])
    path = tmp_path / f"p{n}.gz"
    call_command("dump_study", study.slug, str(path))
    call_command("load_study", str(path), "--as", f"q{n}", stdout=io.StringIO())

    def shape(slug):
        rows = list(FreeTag.objects.filter(study__slug=slug).order_by("pk"))
        position = {t.pk: i for i, t in enumerate(rows)}
        return [(t.name, position.get(t.merged_into_id)) for t in rows]

    assert shape(f"q{n}") == shape(f"p{n}")
