"""Claude Code: transcripts, CLI runs and OTLP into the store."""
