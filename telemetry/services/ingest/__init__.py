"""Ingest: what dispatchers and daemons send, checked, redacted and stored."""
