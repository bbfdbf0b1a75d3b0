import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0012_evolve"),
    ]

    operations = [
        migrations.AddField(
            model_name="annotation",
            name="evidence_turn",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="annotation.turn",
            ),
        ),
        migrations.AddField(
            model_name="annotation",
            name="evidence_part",
            field=models.CharField(
                blank=True,
                choices=[("user", "user"), ("reply", "reply")],
                max_length=5,
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="annotation",
            name="evidence_start",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="annotation",
            name="evidence_end",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]
