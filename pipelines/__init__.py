"""The Dagster code location: definitions, partitions, sensors, schedules, resources, checks."""
