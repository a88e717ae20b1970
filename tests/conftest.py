"""Shared test set-up: W&B always offline (real run files, no network), quiet logs, and the
test tiers kept honest.

Tiers (markers in pyproject.toml): the unit tier, ``pytest -m "not integration"``, must stay
fast; ``slow`` marks the longest of the integration tests, so a ``slow`` test without
``integration`` would sit in the unit tier: collection stops and names it.
"""

import os

import pytest

os.environ["WANDB_MODE"] = "offline"
os.environ["WANDB_SILENT"] = "true"
# what importing lit_seq sets, set before any test module loads torch: a file run alone
# whose imports load torch or lightning before lit_seq otherwise got spinning OpenMP threads
# (the whole suite's first file imports lit_seq first), and on a loaded machine its CPU tests
# ran 10-30x slower (a bf16 population fit: 110 s against 7 s, load 14)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.hookimpl(tryfirst=True)  # before -m deselects: whichever tier runs, it is checked
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """UsageError naming every test marked ``slow`` but not ``integration``."""
    untiered = [
        item.nodeid
        for item in items
        if item.get_closest_marker("slow") and not item.get_closest_marker("integration")
    ]
    if untiered:
        raise pytest.UsageError(
            f"{len(untiered)} test(s) marked slow but not integration (slow implies "
            "integration: add @pytest.mark.integration): " + ", ".join(untiered)
        )
