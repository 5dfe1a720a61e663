"""Exhaustive and randomized checking of the claims on a concrete render backend (C1–C4, C6, C7)."""
