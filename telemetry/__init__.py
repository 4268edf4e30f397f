"""octel telemetry."""
