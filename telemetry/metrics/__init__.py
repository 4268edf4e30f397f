"""Metric catalogue (declared as data) and its derivation from the store."""
