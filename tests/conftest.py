"""Shared test set-up: W&B always offline (real run files, no network), quiet logs, the
test tiers kept honest, and the tests spread over the xdist workers.

Tiers (markers in pyproject.toml): the unit tier, ``pytest -m "not integration"``, must stay
fast; ``slow`` marks the longest of the integration tests, so a ``slow`` test without
``integration`` would sit in the unit tier: collection stops and names it.

Spreading (``--dist loadgroup`` in pyproject.toml): the tests of a file that share a module
fixture (every shipped grid built, a Ray cluster, a reference fit) form one xdist group, so
that fixture is paid once, on one worker; every other test goes to whichever worker is free,
the slow ones first, so that no long file is left to run alone at the end (with ``--dist
loadfile`` the heavy files with few tests were handed out last).
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


# before -m deselects (whichever tier runs, it is checked) and before xdist reads the groups
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """UsageError naming every test marked ``slow`` but not ``integration``; then the xdist
    groups and, on an xdist worker of ``--dist loadgroup``, the order (see the module)."""
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
    for item in items:
        if _shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.path.name))
    if getattr(config.option, "loadgroup", False):  # set on the workers of --dist loadgroup
        items.sort(key=_start_order)  # stable: a file's tests keep their order


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    """Whether ``item`` uses (directly or not) a fixture set up once for its module or class."""
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(
        defs and defs[-1].scope in ("module", "class", "package")
        for defs in info.name2fixturedefs.values()
    )


def _start_order(item: pytest.Item) -> int:
    """Grouped tests, then slow, then other integration tests, then unit tests."""
    if item.get_closest_marker("xdist_group"):
        return 0
    if item.get_closest_marker("slow"):
        return 1
    return 2 if item.get_closest_marker("integration") else 3
