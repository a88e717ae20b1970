"""Worked examples that use lit_seq from outside the package (see docs/plugins.md)."""
