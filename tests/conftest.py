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
