from django.apps import AppConfig


class SchedulerConfig(AppConfig):
    name = "scheduler"
    verbose_name = "Scheduler"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_delete, post_save

        from core.models import AccessToken
        from core.services.tokens import credential_revoked

        from agents.pipeline.observers import register_run_end
        from agents.toolkits import ToolkitEntry, register_toolkit

        from .job_hooks import schedule_job_hooks_register
        from .services.firing import schedule_runs_concern_run_end, schedule_runs_on_run_end
        from .services.withdrawn import account_changed, account_deleted, token_deleted, token_revoked
        from .toolkit import ScheduleTools

        schedule_job_hooks_register()

        credential_revoked.connect(token_revoked, sender=AccessToken, dispatch_uid="scheduler.token_revoked")
        post_delete.connect(token_deleted, sender=AccessToken, dispatch_uid="scheduler.token_deleted")
        post_delete.connect(account_deleted, sender=get_user_model(), dispatch_uid="scheduler.account_deleted")
        # The run pipeline imports nothing of the scheduler: a paused run a schedule fired follows
        # its end from here.
        register_run_end("scheduler", schedule_runs_on_run_end, applies=schedule_runs_concern_run_end)
        # An admin agent given the "schedules" toolkit manages its user's schedules; the agents app
        # offers it from here.
        register_toolkit(ToolkitEntry(
            "schedules", "Schedules", "Create, list, update and delete the user's cron schedules (provenance: managed by the agent).", ScheduleTools,
        ))
        post_save.connect(account_changed, sender=get_user_model(), dispatch_uid="scheduler.account_changed")
