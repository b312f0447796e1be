from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0008_workflow_definitions'),
    ]

    operations = [
        migrations.AddField(
            model_name='job',
            name='parent_job_id',
            field=models.CharField(blank=True, db_index=True, default='', max_length=64),
        ),
        migrations.AddField(
            model_name='job',
            name='branch_index',
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='job',
            name='result',
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
