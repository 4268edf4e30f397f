"""Session trees as OpenTelemetry traces (the export side): mapping, ids, OTLP export."""
