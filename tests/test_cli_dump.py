"""The fit's config dumps made without re-checking the parsed config (``LitSeqCLI._dump_config``,
a member's ``config.yaml``) hold what LightningCLI's checked ones hold."""

import pytest
from lightning.pytorch.cli import LightningCLI

from lit_seq import fit
from tests.helpers import CONFIG_DIR

# one per system and data family (all 72 shipped ones agreed when this was written)
CONFIGS = (
    "echo/rnn.yaml",
    "signal/transformer.yaml",
    "seq2seq/transformer.yaml",
    "deletang/reverse_string/lstm.yaml",
)


@pytest.mark.parametrize("config", CONFIGS)
def test_the_unchecked_dumps_equal_lightnings_checked_ones(config, tmp_path):
    cli = fit.check_config(["--config", str(CONFIG_DIR / config), "--wandb.mode=off"])
    ours = cli.config_dump  # made as the classes were built
    del cli.config_dump
    LightningCLI._dump_config(cli)
    assert ours == cli.config_dump
    # what save_member_config writes and SaveConfigCallback writes, both ways
    texts = []
    for skip in (True, False):
        path = tmp_path / f"config_{skip}.yaml"
        cli.parser.save(
            cli.config, str(path), skip_unset=False, multifile=False, skip_validation=skip
        )
        texts.append(path.read_text())
    assert texts[0] == texts[1]
