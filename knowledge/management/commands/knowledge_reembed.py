"""``manage.py knowledge_reembed BASE --to EMBEDDER``: move a base to another embedder while it
stays searchable (knowledge.services.reembed)."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from knowledge.embedders import EmbedderError
from knowledge.models import KnowledgeBase
from knowledge.services.reembed import base_reembed


class Command(BaseCommand):
    help = "Re-embed every chunk of a knowledge base with another embedder, then switch the base to it (no downtime)."

    def add_arguments(self, parser):
        parser.add_argument("base", help="the base's id, or its name (a shared base, or one name only one user has)")
        parser.add_argument("--to", required=True, dest="embedder", help="minilm, openai:<model> or fastembed:<model>")

    def handle(self, *args, base: str, embedder: str, **options):
        matches = list(KnowledgeBase.all_users.filter(pk=base).values_list("pk", flat=True)) or list(
            KnowledgeBase.all_users.filter(name=base).values_list("pk", flat=True)
        )
        if not matches:
            raise CommandError(f"No knowledge base {base!r}")
        if len(matches) > 1:
            raise CommandError(f"{len(matches)} bases are called {base!r}; give its id: {', '.join(matches)}")
        try:
            result = base_reembed(base_id=matches[0], embedder_id=embedder, report=lambda line: self.stdout.write(line))
        except EmbedderError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(self.style.SUCCESS(
            f"{result.contents} content(s), {result.chunks} chunk(s) embedded with {result.new_embedder}; "
            f"{result.deleted} chunk(s) of {result.old_embedder} deleted"
        ))
