"""First-run set-up for `make run`: an operator account with a random password, printed once."""
from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction


class Command(BaseCommand):
    help = "Create the operator account on first run (random password, printed once) and seed demo data."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--username", default="operator")

    def handle(self, *args, username: str, **options) -> None:
        User = get_user_model()
        with transaction.atomic():
            if User.objects.filter(is_superuser=True).exists():
                self.stdout.write("bootstrap: an operator account already exists; nothing to create")
            else:
                password = secrets.token_urlsafe(12)
                User.objects.create_superuser(username=username, email="", password=password)
                self.stdout.write(self.style.SUCCESS(
                    "\n  Operator account created (shown once, store it now):\n"
                    f"    username: {username}\n    password: {password}\n"
                    "  Change it at /admin/password_change/.\n"
                ))
        self._seed_demo_agent()

    def _seed_demo_agent(self) -> None:
        import os

        from agents.models import AgentDefinition
        from agents.services.definitions import definition_create

        if AgentDefinition.objects.exists():
            return
        model = "openai:gpt-4o-mini" if os.environ.get("OPENAI_API_KEY") else "offline:demo"
        definition_create(
            agent_id="demo",
            name="Demo Agent",
            description="A demo assistant: calculator, clock, files, and actions that ask before they act.",
            model=model,
            instructions=(
                "You are a helpful assistant. Use the tools when they help. Sending email and booking "
                "meetings need the user's approval; say what you are about to do."
            ),
            tools=["calculator", "datetime", "workspace", "demo_actions"],
            add_history_to_context=True,
            num_history_runs=5,
            update_memory_on_run=True,
            add_memories_to_context=True,
        )
        self.stdout.write(f"bootstrap: seeded the demo agent 'demo' on {model}")
