"""Shared test set-up: W&B always offline (real run files, no network), quiet logs."""

import os

os.environ["WANDB_MODE"] = "offline"
os.environ["WANDB_SILENT"] = "true"
