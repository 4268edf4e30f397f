"""Readers of everything Claude Code leaves: on-disk transcripts (every layout), stream-json,
and the price table that costs them. Pure except ``layout``, which finds and reads the files."""
