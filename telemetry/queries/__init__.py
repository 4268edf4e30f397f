"""Post-mortem queries that the `octel` command line and the web console both call.

Each function takes an open `sqlmodel.Session`, does its filtering, grouping and paging in the
database, and returns plain JSON-ready dicts (ISO 8601 times, no ORM objects).
"""

from __future__ import annotations

__all__ = ["costs", "sessions"]
