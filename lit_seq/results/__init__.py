"""A grid's results, from its records alone: tables, plots and the report that writes both.

Below the commands that use it (``lit_seq.ablate`` at the end of a grid, ``lit_seq.report``
and ``lit_seq.evaluate``), above nothing but ``lit_seq.record``: no torch, no Lightning.
"""
