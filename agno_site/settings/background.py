"""What runs in the background: the broker (Redis) for Celery, Channels and the cache; the durable
job queue and its workers; the periodic work (the metrics refresh, schedules) and beat's schedule."""
from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from . import envtools as env

# --- Redis, Celery, Channels -----------------------------------------------------------------
REDIS_URL = env.redis_url("REDIS_URL")

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
# Celery's Django fixup closes the DB connection around every task unless this is set
# (a new PostgreSQL connection per task costs ~15 ms).
CELERY_DB_REUSE_MAX = 1000
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 defaults socket_timeout to 5 s, the same as channels-redis's blocking
            # pop, which kills idle consumers (django/channels_redis#422).
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": None}]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

CACHES = (
    {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
    if REDIS_URL
    else {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
)

# --- Background runs (the durable job queue) --------------------------------------------------
AGENTOS_BACKGROUND_MAX_CONCURRENCY = env.integer("AGENTOS_BACKGROUND_MAX_CONCURRENCY", 256, minimum=1)
AGENTOS_BACKGROUND_MAX_PER_USER = env.integer("AGENTOS_BACKGROUND_MAX_PER_USER", 8, minimum=1)
AGENTOS_BACKGROUND_MAX_QUEUE_DEPTH = env.integer("AGENTOS_BACKGROUND_MAX_QUEUE_DEPTH", 1000, minimum=0)
# One user's share of the queue (0: only the depth above limits it).
AGENTOS_BACKGROUND_MAX_QUEUE_PER_USER = env.integer("AGENTOS_BACKGROUND_MAX_QUEUE_PER_USER", 100, minimum=0)
AGENTOS_BACKGROUND_MAX_ATTEMPTS = env.integer("AGENTOS_BACKGROUND_MAX_ATTEMPTS", 1, minimum=1)
AGENTOS_BACKGROUND_LEASE_SECONDS = env.integer("AGENTOS_BACKGROUND_LEASE_SECONDS", 60, minimum=3)
AGENTOS_BACKGROUND_RETRY_DELAY_SECONDS = env.integer("AGENTOS_BACKGROUND_RETRY_DELAY_SECONDS", 5, minimum=0)
AGENTOS_BACKGROUND_TIMEOUT_SECONDS = env.integer("AGENTOS_BACKGROUND_TIMEOUT_SECONDS", 3600, minimum=1)
AGENTOS_IDEMPOTENCY_TTL_SECONDS = env.integer("AGENTOS_IDEMPOTENCY_TTL_SECONDS", 86400, minimum=1)
# Without a broker (no REDIS_URL) each web process executes the job table itself (false: never).
EMBEDDED_WORKER = env.boolean("EMBEDDED_WORKER", True)
# Jobs one worker process (Celery, or the embedded worker) carries at once on its event loop.
WORKER_RUNS_PER_PROCESS = env.integer("WORKER_RUNS_PER_PROCESS", 256, minimum=1)
# How often the reaper looks for expired leases (Celery beat, or the embedded worker).
AGENTOS_REAPER_INTERVAL_SECONDS = env.integer("AGENTOS_REAPER_INTERVAL_SECONDS", 10, minimum=1)
# GET /ready answers 503 once no process has finished a reaper pass for this long.
READY_REAPER_MAX_AGE_SECONDS = env.integer("READY_REAPER_MAX_AGE_SECONDS", max(60, 3 * AGENTOS_REAPER_INTERVAL_SECONDS), minimum=1)
# Each process holding jobs writes its liveness this often (one row per worker), and the reaper
# gives up the jobs of a worker whose heartbeat is this old, without waiting for their leases.
AGENTOS_PROCESS_HEARTBEAT_SECONDS = env.number("AGENTOS_PROCESS_HEARTBEAT_SECONDS", 5.0, minimum=0.1)
AGENTOS_PROCESS_LOST_AFTER_SECONDS = env.number("AGENTOS_PROCESS_LOST_AFTER_SECONDS", 4 * AGENTOS_PROCESS_HEARTBEAT_SECONDS, minimum=0.3)
if AGENTOS_PROCESS_LOST_AFTER_SECONDS < 2 * AGENTOS_PROCESS_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured("AGENTOS_PROCESS_LOST_AFTER_SECONDS must be at least twice AGENTOS_PROCESS_HEARTBEAT_SECONDS")
# Metrics (metrics/): days are cut in this time zone; a refresh also recomputes the days of runs
# updated up to the overlap before its watermark (a run written just before it, committed after);
# a refresh marked running for longer than the stale time may be started again.
METRICS_TIMEZONE = env.string("METRICS_TIMEZONE", "UTC")
try:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    ZoneInfo(METRICS_TIMEZONE)
except (ZoneInfoNotFoundError, ValueError) as exc:
    raise ImproperlyConfigured(f"METRICS_TIMEZONE={METRICS_TIMEZONE!r} is not a known time zone (e.g. UTC, Europe/Paris)") from exc
METRICS_REFRESH_OVERLAP_SECONDS = env.integer("METRICS_REFRESH_OVERLAP_SECONDS", 300, minimum=0)
METRICS_REFRESH_STALE_SECONDS = env.integer("METRICS_REFRESH_STALE_SECONDS", 3600, minimum=60)
# Every user's rows are refreshed (incrementally) once per interval: beat's task with a broker,
# each web process's embedded refresher without one; a key per interval makes it one refresh
# however many ask. 0: only on demand (POST /metrics/refresh, the dashboard, manage.py).
METRICS_REFRESH_INTERVAL_SECONDS = env.integer("METRICS_REFRESH_INTERVAL_SECONDS", 3600, minimum=0)
if 0 < METRICS_REFRESH_INTERVAL_SECONDS < 60:
    raise ImproperlyConfigured(f"METRICS_REFRESH_INTERVAL_SECONDS must be 0 (off) or at least 60, got {METRICS_REFRESH_INTERVAL_SECONDS}")
# --- Schedules ---------------------------------------------------------------------------------
# How often schedules are swept: due fires, their runs' statuses, retries (the embedded ticker
# without a broker; beat's safety-net task next to the per-schedule PeriodicTasks with one).
SCHEDULER_TICK_SECONDS = env.integer("SCHEDULER_TICK_SECONDS", 15, minimum=1)
# Without a broker each web process runs the ticker (false: schedules fire only through beat).
SCHEDULER_TICKER = env.boolean("SCHEDULER_TICKER", True)
# How many schedules one user (or service account) may hold, and the shortest time between two
# of a schedule's ticks (cron has minute precision: 60 allows every minute). 0: no limit.
SCHEDULES_MAX_PER_USER = env.integer("SCHEDULES_MAX_PER_USER", 100, minimum=0)
SCHEDULE_MIN_INTERVAL_SECONDS = env.integer("SCHEDULE_MIN_INTERVAL_SECONDS", 60, minimum=0)
CELERY_BEAT_SCHEDULE = {
    "reap-expired-jobs": {"task": "agno_site.reap_jobs", "schedule": float(AGENTOS_REAPER_INTERVAL_SECONDS)},
    "scheduler-tick": {"task": "agno_site.scheduler.tick", "schedule": float(SCHEDULER_TICK_SECONDS)},
}
if METRICS_REFRESH_INTERVAL_SECONDS:
    # Sent twice per interval, so that beat's drift never skips an interval; the interval's key
    # makes the second a no-op. The task does nothing once the interval is set to 0 (beat keeps
    # an entry it once stored in its database).
    CELERY_BEAT_SCHEDULE["metrics-refresh"] = {"task": "agno_site.metrics.refresh", "schedule": METRICS_REFRESH_INTERVAL_SECONDS / 2}
CELERY_TASK_SOFT_TIME_LIMIT = AGENTOS_BACKGROUND_TIMEOUT_SECONDS + 60
CELERY_TASK_TIME_LIMIT = AGENTOS_BACKGROUND_TIMEOUT_SECONDS + 120
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # Above the hard time limit, else Redis redelivers a task that is still running.
    "visibility_timeout": CELERY_TASK_TIME_LIMIT + 600,
    # Scan for the unacknowledged tasks of a dead worker every 10 s (kombu's default throttles to ~100 s).
    "unacked_restore_interval": 10,
    "unacked_restore_throttle": 1,
}
