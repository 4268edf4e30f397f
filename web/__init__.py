"""octel web."""
