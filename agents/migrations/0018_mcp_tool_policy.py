"""MCPToolPolicy: which tools of an allow-listed MCP server need the user's confirmation or an
operator's approval (issue 36, part 3)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0017_job_models_move_to_jobs_app'),
    ]

    operations = [
        migrations.CreateModel(
            name='MCPToolPolicy',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('server', models.CharField(help_text='A name of the MCP_SERVERS allow-list, e.g. demo.', max_length=100, unique=True)),
                ('requires_confirmation_tools', models.JSONField(blank=True, default=list, help_text="Tools whose calls wait for the user's confirmation (the chat's approval card).")),
                ('approval_tools', models.JSONField(blank=True, default=list, help_text="Tools whose calls wait for an operator's approval (the admin's Approvals).")),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'verbose_name': 'MCP server tool policy',
                'verbose_name_plural': 'MCP server tool policies',
                'ordering': ['server'],
            },
        ),
    ]
