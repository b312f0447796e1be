from django.apps import AppConfig


class LearningsConfig(AppConfig):
    name = "learnings"
    verbose_name = "Learnings"
    default_auto_field = "django.db.models.BigAutoField"
