"""Dependency-free leaves every layer may use: value checks, error lines, atomic writes,
safe YAML, the shipped files, threads and disk, the run's environment."""
