"""octel detectors."""
