"""Conversation.key (issue 20, defect 1): a public name unique in the study. Existing rows
get the rule of annotation/conversation_keys.py, in the order of their ids: the external id
for the first with it, `<id>~2`, `~3`... (the first free) for the later ones; an id ending
in `~1` starts at `~2`. (An id spelled like a key, `x~2`, keeps it here whatever its place;
a later import gives such an id `x~2~2` when the key x~2 is taken.) The next migration
makes the key unique in the study: apart, so that no schema change shares a transaction
with this data change."""

from django.db import migrations, models
from django.db.models import Count, F, Q


def fill_keys(apps, schema_editor):
    Conversation = apps.get_model("annotation", "Conversation")
    Conversation.objects.update(key=F("external_id"))
    # a repeated id, or one ending in ~1 (no key does: that spelling names the first of a
    # repeated id)
    to_suffix = (
        Conversation.objects.values_list("study_id", "external_id")
        .annotate(n=Count("id"))
        .filter(Q(n__gt=1) | Q(external_id__endswith="~1"))
        .order_by("study_id", "external_id")
    )
    for study_id, external_id, _ in to_suffix.iterator():
        rows = Conversation.objects.filter(study_id=study_id)
        ids = rows.filter(external_id=external_id).order_by("id").values_list("id", flat=True)
        n = 1
        for pk in list(ids)[0 if external_id.endswith("~1") else 1 :]:
            n += 1
            while rows.filter(key=f"{external_id}~{n}").exists():
                n += 1
            rows.filter(pk=pk).update(key=f"{external_id}~{n}")


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0020_conversation_split_considered"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="key",
            field=models.CharField(default="", max_length=270),
            preserve_default=False,
        ),
        migrations.RunPython(fill_keys, migrations.RunPython.noop, elidable=False),
    ]
