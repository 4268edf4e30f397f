"""Spend: costs linked across sources, repaired and repriced."""
