"""Sessions are the unit of change: one dynamic partition per session,
keyed ``<harness>--<session_id>`` (funes.traces.model.session_key)."""

from __future__ import annotations

import dagster as dg

session_partitions = dg.DynamicPartitionsDefinition(name="sessions")
