"""Packed runs: K fits of one shape trained in one process as one stacked computation."""
