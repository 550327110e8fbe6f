"""Keeping memory healthy over time: items, sessions, compression, archives, maintenance jobs,
schedules."""
