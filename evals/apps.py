from django.apps import AppConfig


class EvalsConfig(AppConfig):
    name = "evals"
    verbose_name = "Evals"

    def ready(self) -> None:
        # The job handlers register at import: every process that claims jobs imports the apps.
        from . import tasks  # noqa: F401
