"""A fit's W&B options are one group (``--wandb.mode``, ``wandb:`` in a config), and the
spellings from before it (``--wandb off``, ``--wandb_project P``, those keys in a run
folder's ``config.yaml``) still mean the same."""

import dataclasses

import pytest
import yaml

from lit_seq.ablate.grid import config_digest
from lit_seq.fit import BadInput, check_config
from lit_seq.fit.wandb_options import OLD_KEYS, WandbOptions, new_layout, new_spelling
from tests.helpers import REPO

ECHO_RNN = REPO / "configs" / "echo" / "rnn.yaml"

NEW = [
    "--wandb.mode=offline",
    "--wandb.project=p",
    "--wandb.entity=e",
    "--wandb.group=g",
    "--wandb.tags=[a=1, b]",
    "--wandb.save_requirements=true",
    '--wandb.config={"cell": "c", "seed": 3}',
    "--wandb.log_model=true",
]
OLD = [
    "--wandb",
    "offline",
    "--wandb_project=p",
    "--wandb_entity",
    "e",
    "--wandb_group=g",
    "--wandb_tags=[a=1, b]",
    "--wandb_save_requirements=true",
    '--wandb_config={"cell": "c", "seed": 3}',
    "--wandb_log_model",
    "true",
]
EXPECTED = WandbOptions(
    "offline", "p", "e", "g", ["a=1", "b"], True, {"cell": "c", "seed": 3}, True
)


def test_every_field_has_its_old_spelling():
    assert OLD_KEYS == {
        "wandb": "mode",
        "wandb_project": "project",
        "wandb_entity": "entity",
        "wandb_group": "group",
        "wandb_tags": "tags",
        "wandb_save_requirements": "save_requirements",
        "wandb_config": "config",
        "wandb_log_model": "log_model",
    }
    assert set(OLD_KEYS.values()) == {f.name for f in dataclasses.fields(WandbOptions)}


def test_old_flags_are_said_in_the_group_spelling():
    assert new_spelling(OLD) == NEW
    assert new_spelling(["--wandb=off", "--trainer.max_steps=5"]) == [
        "--wandb.mode=off",
        "--trainer.max_steps=5",
    ]
    assert new_spelling(['--wandb={"mode": "off"}']) == ['--wandb={"mode": "off"}']  # the group


@pytest.mark.parametrize("args", [NEW, OLD], ids=["group", "old spellings"])
def test_both_spellings_build_the_same_options(args):
    cli = check_config(["--config", str(ECHO_RNN), *args])
    assert cli.wandb == EXPECTED
    assert WandbOptions(**cli.config.wandb) == EXPECTED


def test_a_config_file_with_the_old_keys_reads_as_one_with_the_section(tmp_path):
    content = yaml.safe_load(ECHO_RNN.read_text())
    # as a grid run's config.yaml holds them: every field, its config a mapping of its own
    given = {"project": "p", "tags": ["x"], "config": {"cell": "c"}, "log_model": True}
    old = {**content, "wandb": "off", **{f"wandb_{k}": v for k, v in given.items()}}
    (tmp_path / "old.yaml").write_text(yaml.safe_dump(old))
    new = {**content, "wandb": {"mode": "off", **given}}
    (tmp_path / "new.yaml").write_text(yaml.safe_dump(new))
    assert new_layout(new) is None  # nothing to move
    found = [check_config(["--config", str(tmp_path / f)]).wandb for f in ("old.yaml", "new.yaml")]
    assert found[0] == found[1] == WandbOptions(mode="off", **given)


def test_a_bad_mode_is_one_line_in_either_spelling():
    for args in (["--wandb", "maybe"], ["--wandb.mode=maybe"]):
        with pytest.raises(BadInput) as error:
            check_config(["--config", str(ECHO_RNN), *args])
        assert str(error.value) == (
            "wandb.mode='maybe' is not one of ['auto', 'online', 'offline', 'off']"
        )


def test_w_and_b_options_leave_a_grid_runs_identity_as_it_was():
    # a grid folder resumes whatever W&B options its runs were given, in either spelling
    plain = check_config(["--config", str(ECHO_RNN)]).config
    for args in (NEW, OLD):
        assert config_digest(check_config(["--config", str(ECHO_RNN), *args]).config) == (
            config_digest(plain)
        )
