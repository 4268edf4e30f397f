"""The store: tables, engine, migrations and write-time counters."""
