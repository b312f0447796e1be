from django.apps import AppConfig


class SessionsConfig(AppConfig):
    name = "sessions"
    # "sessions" is django.contrib.sessions' label, which browser login needs.
    label = "agno_sessions"
    verbose_name = "Sessions and runs"
