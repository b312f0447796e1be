"""The scheduler's writes: schedules (schedules), their PeriodicTasks (beat), their fires (firing)."""
