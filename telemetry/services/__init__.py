"""Write services: ingestion, indexing, imports, heartbeat files, retention."""
