"""Feedback on replies: one rating (up or down, with an optional comment) per user per run.

The rater is the run's owner: a run is looked up through the rater's own scope, so another
user's run is missing (``RunNotFound``), exactly like one that does not exist.
"""
from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from sessions.models import FeedbackRating, Run, RunFeedback

COMMENT_MAX_CHARS = 2000


class RunNotFound(Exception):
    """The run does not exist, or is not the caller's."""


def run_feedback_set(*, user_id: str, run_id: str, rating: str, comment: str = "") -> RunFeedback:
    """Rate ``run_id`` as ``user_id``, replacing their earlier rating of it. Two queries (three
    when the rating is new); a concurrent first rating of the same run ends as one row."""
    if rating not in FeedbackRating.values:
        raise ValueError(f"rating must be one of {FeedbackRating.values}")
    run = Run.objects.for_user(user_id).filter(pk=run_id).only("run_id", "session_id", "component_id", "user_id").first()
    if run is None:
        raise RunNotFound(run_id)
    now = timezone.now()
    fields = {"rating": rating, "comment": comment[:COMMENT_MAX_CHARS], "updated_at": now}
    mine = RunFeedback.objects.for_user(user_id).filter(run_id=run.pk)
    if not mine.update(**fields):
        try:
            with transaction.atomic():
                return RunFeedback.objects.create(
                    user_id=user_id, run=run, session_id=run.session_id, component_id=run.component_id, created_at=now, **fields,
                )
        except IntegrityError:  # rated at the same moment from another tab: that row is updated
            mine.update(**fields)
    return mine.get()


def run_feedback_delete(*, user_id: str, run_id: str) -> bool:
    """Withdraw ``user_id``'s rating of ``run_id``; False when there was none."""
    deleted, _ = RunFeedback.objects.for_user(user_id).filter(run_id=run_id).delete()
    return deleted > 0
