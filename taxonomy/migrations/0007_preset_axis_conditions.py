"""Axis conditions (`Axis.when`: an axis labelled only when another has given codes) and
preset versions (`TaxonomyVersion.preset_version`, issue 21 point 5): the version 1 of every
taxonomy made from a preset (same slug) is its preset's version 1, which
Taxonomy.load_preset derives the preset's later versions from."""

from django.db import migrations, models

PRESETS = ("interaction-smells", "agent-misalignment", "split-check", "split-check-entries")


def mark(apps, schema_editor):
    TaxonomyVersion = apps.get_model("taxonomy", "TaxonomyVersion")
    TaxonomyVersion.objects.filter(taxonomy__slug__in=PRESETS, number=1).update(preset_version=1)


class Migration(migrations.Migration):

    dependencies = [
        ('taxonomy', '0006_preset_examples'),
    ]

    operations = [
        migrations.AddField(
            model_name='axis',
            name='when',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name='taxonomyversion',
            name='preset_version',
            field=models.PositiveSmallIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(mark, migrations.RunPython.noop),
    ]
