"""octel archiver."""
