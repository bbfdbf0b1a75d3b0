"""A label import is a job of its own kind (`label_import`), no longer an `import` job told
apart by params["what"] = "annotations"; an old coding-filter dry run over the study (an
`import` job of params["what"] = "filter_dry_run", from before the filter had a kind) becomes
the `filter` job a dry run is today (params filter "coding", apply false).

Backwards, label imports become `import` jobs with params["what"] = "annotations" again; the
filter jobs stay `filter` jobs (a kind the code before this migration reads alike)."""

from django.db import migrations, models

LABEL_IMPORT_WHAT = "annotations"
FILTER_DRY_RUN_WHAT = "filter_dry_run"


def _without_what(params: dict) -> dict:
    return {k: v for k, v in params.items() if k != "what"}


def forwards(apps, schema_editor):
    Job = apps.get_model("annotation", "Job")
    for job in Job.objects.filter(kind="import", params__what=LABEL_IMPORT_WHAT).iterator():
        job.kind, job.params = "label_import", _without_what(job.params)
        job.save(update_fields=["kind", "params"])
    for job in Job.objects.filter(kind="import", params__what=FILTER_DRY_RUN_WHAT).iterator():
        job.kind = "filter"
        job.params = {**_without_what(job.params), "filter": "coding", "apply": False}
        job.save(update_fields=["kind", "params"])


def backwards(apps, schema_editor):
    Job = apps.get_model("annotation", "Job")
    for job in Job.objects.filter(kind="label_import").iterator():
        job.kind, job.params = "import", {**job.params, "what": LABEL_IMPORT_WHAT}
        job.save(update_fields=["kind", "params"])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0024_episodes"),
    ]

    operations = [
        migrations.AlterField(
            model_name="job",
            name="kind",
            field=models.CharField(
                choices=[
                    ("import", "Import"),
                    ("agreement", "Agreement"),
                    ("export", "Export"),
                    ("split", "Split"),
                    ("filter", "Filter"),
                    ("judge", "Judge"),
                    ("label_import", "Label Import"),
                ],
                max_length=20,
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
