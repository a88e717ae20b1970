"""Grid specs: expansion is pure and ordered; every bad spec is one line, exit 2, no writes."""

from pathlib import Path

import pytest
import yaml

from lit_seq.ablate.__main__ import main
from lit_seq.ablate.axes import AXES
from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.grid import load_grid
from lit_seq.ablate.spec import config_file, expand, load_spec, parse_spec
from lit_seq.fit import BadInput, build_cli, check_config
from lit_seq.results.paper import MEMORY_ARCHS, NEW_TASKS
from tests.helpers import GRIDS, REPO

STRING_TASKS = ("reverse_string", "stack_manipulation", "duplicate_string", "odds_first")
STRING_TASKS += ("binary_addition",)


def spec(**changes) -> dict:
    raw = {
        "name": "g",
        "seeds": [0, 1],
        "overrides": {"steps": 5},
        "blocks": [
            {"name": "rec", "axes": {"task": ["echo"], "arch": ["rnn", "lstm"]}},
            {
                "name": "tf",
                "config": "configs/signal/transformer.yaml",
                "axes": {"pos_mode": ["none", "learnable"], "readout": ["cls"]},
                "overrides": {"model.dropout": 0.1},
            },
        ],
    }
    return parse_spec({**raw, **changes})


def test_expansion_order_blocks_axes_then_seeds():
    runs = expand(spec())
    assert [r.run_id for r in runs] == [
        "rec__task=echo__arch=rnn__seed=0",
        "rec__task=echo__arch=rnn__seed=1",
        "rec__task=echo__arch=lstm__seed=0",
        "rec__task=echo__arch=lstm__seed=1",
        "tf__pos_mode=none__readout=cls__seed=0",
        "tf__pos_mode=none__readout=cls__seed=1",
        "tf__pos_mode=learnable__readout=cls__seed=0",
        "tf__pos_mode=learnable__readout=cls__seed=1",
    ]
    assert [r.index for r in runs] == list(range(8))
    assert runs[2].cell == "rec__task=echo__arch=lstm" and runs[2].seed == 0


def test_conditional_blocks_pick_configs_and_arguments():
    rec, *_, tf = expand(spec())
    # task/arch choose the base config, so they are not repeated as arguments
    assert rec.config == "configs/echo/rnn.yaml"
    assert rec.overrides == (
        "--trainer.max_steps=5",
        "--seed_everything=0",
        "--data.init_args.seed=0",
    )
    # grid overrides, then block overrides (model.X spelled model.init_args.X), then axes
    assert tf.config == "configs/signal/transformer.yaml"
    assert tf.overrides == (
        "--trainer.max_steps=5",
        "--model.init_args.dropout=0.1",
        "--model.init_args.pos_mode=learnable",
        "--model.init_args.readout=cls",
        "--seed_everything=1",
        "--data.init_args.seed=1",
    )
    assert "readout" not in rec.axes


def test_run_ids_are_unique_stable_and_file_safe():
    first, second = expand(spec()), expand(spec())
    assert first == second
    odd = spec(
        blocks=[
            {
                "name": "b",
                "config": "configs/echo/rnn.yaml",
                "axes": {"data.init_args.gen_factors": [[2], [2, 3]], "lr": [0.001]},
            }
        ]
    )
    ids = [r.run_id for r in expand(odd)]
    assert ids[0] == "b__data.gen_factors=2__lr=0.001__seed=0"
    assert ids[2] == "b__data.gen_factors=2_3__lr=0.001__seed=0"
    assert len(set(ids)) == len(ids)
    assert all("/" not in i and " " not in i for i in ids)


def _expand(grid: Path) -> tuple[dict, list]:
    spec = load_spec(grid)
    return spec, expand(spec)


@pytest.fixture(scope="module")
def shipped() -> dict[str, tuple[dict, list]]:
    """Every shipped grid, validated and expanded into its runs (no cell built)."""
    return {g.stem: _expand(g) for g in GRIDS}


@pytest.fixture(scope="module")
def built() -> dict[str, tuple[dict, list]]:
    """Every shipped grid with every cell built as a fit builds it, the grids sharing one cache
    of built cells (a cell is built once however many grids hold it): ~380 cells, 30-70 s."""
    cells: dict = {}
    return {g.stem: load_grid(g, cells) for g in GRIDS}


@pytest.mark.parametrize("grid", GRIDS, ids=lambda p: p.stem)
def test_every_shipped_grid_is_valid(grid, shipped):
    text = grid.read_text()
    assert text.startswith(f"# python -m lit_seq.ablate ablations/{grid.name}")
    grid_spec, runs = shipped[grid.stem]
    assert grid_spec["name"] == grid.stem and runs


@pytest.mark.integration  # builds every cell: the tier's cost is in the fixture
@pytest.mark.parametrize("grid", GRIDS, ids=lambda p: p.stem)
def test_every_cell_of_every_shipped_grid_builds(grid, built, shipped):
    _, runs = built[grid.stem]
    assert [r.run_id for r in runs] == [r.run_id for r in shipped[grid.stem][1]]
    assert all(r.task == Path(r.config).parts[-2] for r in runs if r.config.startswith("configs/"))


def test_shipped_grid_sizes(shipped):
    sizes = {name: len(runs) for name, (_, runs) in shipped.items()}
    assert sizes["smoke"] <= 4
    assert sizes["arch"] == 24 and sizes["pos_mode"] == 8 * 7 and sizes["readout"] == 3
    # 34 cells that select: 4 learning rates on 3 selection seeds + the 10 reported seeds at
    # the chosen one; the 5 SPEC cells x 10 seeds
    assert sizes["matrix"] == 34 * (4 * 3 + 10) + 5 * 10
    # 90 rows (Table 2: 15 tasks x their 6 models): their 3 rates on 3 selection seeds + the
    # 10 reported seeds at the chosen one
    assert sizes["chomsky"] == 90 * (3 * 3 + 10)
    assert sizes["pe_extrapolation"] == 3 * 7 * (4 * 3 + 10)  # 3 tasks x 7 encodings
    # the budget checks of the chomsky grid: 2 rows x 10 seeds, 7 rows x 3 seeds
    assert sizes["chomsky_budget"] == 2 * 10 and sizes["chomsky_budget_rows"] == 7 * 3
    assert sizes["chomsky_even_pairs_pe"] == 4 * 3  # 4 more encodings x 3 seeds
    assert sizes["chomsky_even_pairs_alibi"] == 10  # its one encoding x 10 seeds
    assert sizes["chomsky_budget_open"] == 6 * 3  # 5 rows (one at 2 rates) x 3 seeds
    assert sizes["chomsky_cycle_transformer"] == 4  # its one row x 4 seeds
    assert sizes["chomsky_faithful_steps"] == 2 * 3  # 2 rows at the earlier steps x 3 seeds
    assert sizes["chomsky_faithful_budget"] == 3  # even pairs / LSTM at 4,000 steps x 3 seeds
    # issue 56's budget check: 3 memory models x 5 string tasks, 1 seed each
    assert sizes["chomsky_memory_budget"] == 3 * 5
    # the GPU grid: the 17 rows the CPU left at chance at N, the memory models on the five
    # string tasks, the six tasks added last x six models; 10 seeds, one rate
    assert sizes["chomsky_gpu"] == (17 + 3 * 5 + 6 * 6) * 10
    # the rows it can decide on a CPU: 3 memory models x 4 regular tasks, 3 seeds each
    assert sizes["chomsky_memory_cpu"] == 3 * 4 * 3
    # 46 cells (associative_recall 4 shapes x 5 archs, parity_check 6, 4 tasks x 5): 4 rates
    # on 3 selection seeds + the 10 reported seeds at the chosen one
    assert sizes["mixers"] == 46 * (4 * 3 + 10)
    # its budget checks: recall 8 cells at 3,000 steps (3 reported seeds), 3 at 10,000 and
    # modular arithmetic 2 at 6,000 (10 reported seeds, so a paired comparison can reach
    # q < 0.05); 2 rates on 3 selection seeds, then the reported seeds at the chosen one
    assert sizes["mixers_budget"] == 8 * (2 * 3 + 3)
    assert sizes["mixers_recall_10k"] == 3 * (2 * 3 + 10) + 10  # + recall_n32_wide, 1 cell
    assert sizes["mixers_modular_6k"] == 2 * (2 * 3 + 10)


def test_the_cpu_string_grid_is_the_gpu_grids_recurrent_string_rows_at_seeds_0_to_2(shipped):
    # the CPU check must be the same runs as the GPU grid's, so the two read side by side
    def runs(name):
        return {(r.run_id, r.config, r.overrides) for r in shipped[name][1]}

    gpu = {
        run
        for run in runs("chomsky_gpu")
        if run[0].endswith(("__seed=0", "__seed=1", "__seed=2"))
        and run[1].endswith(("/rnn.yaml", "/lstm.yaml"))
        and Path(run[1]).parts[-2] in STRING_TASKS
    }
    assert runs("chomsky_strings_cpu") == gpu and len(gpu) == 10 * 3


def test_the_gpu_grid_is_the_rows_a_cpu_cannot_decide_at_10000_steps_and_their_middle_rate(
    shipped,
):
    runs = shipped["chomsky_gpu"][1]
    assert len(runs) == 68 * 10 and len({r.cell for r in runs}) == 68
    assert {r.seed for r in runs} == set(range(10))
    # configs/deletang/<task>/<arch>.yaml: their protocol's configs, one row each
    archs = ("rnn", "lstm", "transformer", *MEMORY_ARCHS)
    rows = {tuple(Path(r.config).parts[-2:]) for r in runs}
    strings = {(t, f"{a}.yaml") for t in STRING_TASKS for a in archs}
    added = {(t, f"{a}.yaml") for t in NEW_TASKS for a in archs}
    assert all(r.config.startswith("configs/deletang/") for r in runs)
    assert rows - strings - added == {
        ("parity_check", "transformer.yaml"),
        ("modular_arithmetic", "transformer.yaml"),
    }
    assert strings | added <= rows
    for run in runs:
        args = dict(a.lstrip("-").split("=", 1) for a in run.overrides if "=" in a)
        assert args["trainer.max_steps"] == "10000"
        assert args["model.init_args.lr"] == "0.0003"  # the middle of their 1e-4, 3e-4, 5e-4


def test_mixers_grid_gives_every_arch_of_a_task_the_same_rates(shipped):
    """No rate tuned for one arch decides another's result: per task, lstm, transformer and
    each mixer select among one list of 4 rates spanning >= 30x."""
    _, runs = shipped["mixers"]
    rates: dict[str, dict[str, set]] = {}
    for r in runs:
        if r.seed in r.select_seeds:
            task = r.axes.get("task", Path(r.config).parts[-2])
            rates.setdefault(task, {}).setdefault(r.axes["arch"], set()).add(r.axes["lr"])
    assert len(rates) == 6
    for task, by_arch in rates.items():
        assert len(by_arch) == 5, task
        lists = {frozenset(v) for v in by_arch.values()}
        assert len(lists) == 1, (task, by_arch)
        (shared,) = lists
        assert len(shared) == 4 and max(shared) / min(shared) >= 30, task


def test_chomsky_grid_keeps_deletangs_lengths(shipped):
    """Training lengths 1..40 by the uniform curriculum, scored up to 200 (5 x 40)."""
    _, runs = shipped["chomsky"]
    for run in runs:
        config = yaml.safe_load((REPO / run.config).read_text())["data"]["init_args"]
        assert config["curriculum"] is True, run.run_id
        assert {"--data.init_args.length=40", "--data.init_args.gen_factors=[5]"} <= set(
            run.overrides
        ), run.run_id
        assert "--range_eval.max_factor=5" in run.overrides, run.run_id


def test_matrix_runs_every_spec_quality_config_as_shipped(shipped):
    """SPEC section 7 is reported from the matrix: each of its configs must appear there
    with nothing but the seed (and axis values equal to the config's own) changed."""
    _, runs = shipped["matrix"]
    shipped = {
        (Path(r.config).parts[-2], Path(r.config).stem)
        for r in runs
        if not any("max_steps" in a or "lr=" in a for a in r.overrides)
        and r.axes.get("pos_mode", "sinusoidal") == "sinusoidal"
        and r.axes.get("residual", True) is True
        and r.axes.get("n_layers", 2) == 2
        and r.axes.get("readout", "mean") == "mean"
    }
    for row in [
        ("signal", "transformer"),
        ("parity_sum", "transformer"),
        ("echo", "rnn"),
        ("echo", "lstm"),
        ("seq2seq", "transformer"),
    ]:
        assert row in shipped


BAD = {
    "malformed": ("name: [oops\n", "malformed YAML"),
    "not a mapping": ("- 1\n", "expected a mapping"),
    "unknown top key": ("name: g\nblocks: []\nsteps: 3\n", "unknown key 'steps'"),
    "no blocks": ("name: g\nblocks: []\n", "blocks must be a non-empty list"),
    "unknown axis": (
        "name: g\nblocks:\n- {config: configs/echo/rnn.yaml, axes: {colour: [red]}}\n",
        "unknown key 'colour'",
    ),
    "empty axis": (
        "name: g\nblocks:\n- {axes: {task: [echo], arch: []}}\n",
        "axis 'arch' must be a non-empty list",
    ),
    "bad value": (
        "name: g\nblocks:\n- {axes: {task: [signal], arch: [transformer], pos_mode: [xpos]}}\n",
        "pos_mode='xpos' is not one of ['sinusoidal', 'learnable', 'none', 'rotary', 'alibi', "
        "'relative', 'randomized']",
    ),
    "bad arch": (
        "name: g\nblocks:\n- {config: configs/echo/rnn.yaml, axes: {arch: [gru]}}\n",
        "arch='gru' is not one of ['transformer', 'rnn', 'lstm', 'mamba', 'linear_rnn', "
        "'linear_attention', 'stack_rnn', 'ndstack_rnn', 'tape_rnn']",
    ),
    "heads do not divide the width": (
        "name: g\nblocks:\n- {axes: {task: [echo], arch: [transformer], n_heads: [4, 5]}}\n",
        "cell block0__task=echo__arch=transformer__n_heads=5: d_model=32 is not divisible by "
        "n_heads=5; allowed n_heads for d_model=32: [1, 2, 4, 8, 16, 32]",
    ),
    "cls readout on a forward-only rnn": (
        "name: g\nblocks:\n- {axes: {task: [signal], arch: [rnn], readout: [mean, cls]}}\n",
        "readout='cls' needs a backbone whose first position sees the whole sequence",
    ),
    "bad dotted value": (
        "name: g\nblocks:\n- {axes: {task: [echo], arch: [rnn], data.gen_factors: [[0]]}}\n",
        "gen_factors entries must be an integer >= 2, got 0",
    ),
    "bad task": ("name: g\nblocks:\n- {axes: {task: [sorting], arch: [rnn]}}\n", "task='sorting'"),
    "missing config": (
        "name: g\nblocks:\n- {config: configs/nope/rnn.yaml}\n",
        "base config 'configs/nope/rnn.yaml' does not exist",
    ),
    "a folder as base config": (
        "name: g\nblocks:\n- {config: configs/echo}\n",
        "config='configs/echo' is a folder; give one YAML file, one of "
        "['configs/echo/lstm.yaml', 'configs/echo/rnn.yaml', 'configs/echo/transformer.yaml']",
    ),
    "unknown wandb key": (
        "name: g\nwandb: {projekt: p}\nblocks:\n- {config: configs/echo/rnn.yaml}\n",
        "bad.yaml: wandb: unknown key 'projekt'; allowed keys are ['project', 'entity']",
    ),
    "empty wandb project": (
        "name: g\nwandb: {project: ''}\nblocks:\n- {config: configs/echo/rnn.yaml}\n",
        "wandb.project='' must be a non-empty string",
    ),
    "readout outside classifier": (
        "name: g\nblocks:\n- {axes: {task: [echo], arch: [rnn], readout: [cls]}}\n",
        "model: Option 'readout' is not accepted",
    ),
    "unknown dotted key": (
        "name: g\noverrides: {data.init_args.colour: 3}\nblocks:\n- {axes: {task: [echo], arch: [rnn]}}\n",
        "data.colour: task 'echo' takes no option 'colour'; no task takes it; 'echo' takes "
        "['length', 'lag', 'start_marker'",
    ),
    "seed override": (
        "name: g\noverrides: {seed_everything: 3}\nblocks:\n- {config: configs/echo/rnn.yaml}\n",
        "'seed_everything' cannot be set by a grid: seeds come from the grid's `seeds:` list",
    ),
    "bad lr": (
        "name: g\nblocks:\n- {config: configs/echo/rnn.yaml, axes: {lr: [0.01, -1]}}\n",
        "lr=-1.0 must be a finite number > 0.0",
    ),
    "repeated axis key": (
        "name: g\nblocks:\n- {axes: {task: [echo], arch: [rnn], lr: [0.1], lr: [0.2]}}\n",
        "key 'lr' is given twice",
    ),
    "alias bomb in the description": (
        "name: g\ndescription: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"d{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n"
            for p, n in zip("abcde", "bcdef", strict=True)
        )
        + "blocks:\n- {axes: {task: [echo], arch: [rnn]}}\n",
        "YAML expands to more than 100,000 nodes",
    ),
    "infinite lr": (
        "name: g\nblocks:\n- {config: configs/echo/rnn.yaml, axes: {lr: [.inf]}}\n",
        "cell block0__lr=inf: model.lr: got 'inf', which is not a valid float",
    ),
    "negative steps": (
        "name: g\nblocks:\n- {config: configs/echo/rnn.yaml, axes: {steps: [-5]}}\n",
        "trainer.max_steps must be an integer >= 1 (or -1: no step limit), got -5",
    ),
    "zero length": (
        "name: g\nblocks:\n- {config: configs/echo/rnn.yaml, axes: {data.length: [0]}}\n",
        "length must be an integer >= 1, got 0",
    ),
    "pos_mode on an rnn": (
        "name: g\nblocks:\n- {config: configs/echo/rnn.yaml, axes: {pos_mode: [none]}}\n",
        "pos_mode='none' only applies to arch='transformer', not 'rnn'",
    ),
    "a string for an int": (
        "name: g\nblocks:\n- {config: configs/echo/rnn.yaml, axes: {data.init_args.length: [ten]}}\n",
        "got 'ten', which is not a valid int",
    ),
    "bad seeds": ("name: g\nseeds: []\nblocks:\n- {config: configs/echo/rnn.yaml}\n", "seeds"),
    "no base config": ("name: g\nblocks:\n- {axes: {arch: [rnn]}}\n", "give config: or both"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_grid_is_one_line_exit_2_and_touches_nothing(case, tmp_path, capsys):
    text, expected = BAD[case]
    grid = tmp_path / "bad.yaml"
    grid.write_text(text)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main([str(grid), "--out", str(out), "--wandb", "off"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lit_seq.ablate: error: ")
    assert expected in err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_missing_grid_file(tmp_path, capsys):
    assert main([str(tmp_path / "none.yaml"), "--dry-run"]) == 2
    assert "cannot read grid file" in capsys.readouterr().err


def test_unknown_key_names_what_is_allowed():
    with pytest.raises(BadGrid, match=r"unknown key 'depth'; use one of \[.*'n_layers'"):
        spec(blocks=[{"config": "configs/echo/rnn.yaml", "axes": {"depth": [2]}}])


def test_dry_run_lists_runs_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    assert main([str(REPO / "ablations" / "smoke.yaml"), "--out", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "3 runs" in text and "recurrent__task=echo__arch=lstm" in text
    assert not Path(out).exists()


@pytest.mark.parametrize("case", ["foreign folder", "unwritable", "a file", "a long name"])
def test_unusable_out_folder_is_refused_before_training(case, tmp_path, capsys):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    out = {
        "foreign folder": tmp_path / "out",
        "unwritable": blocker / "out",
        "a file": blocker,
        "a long name": tmp_path / ("r" * 300),
    }[case]
    if case == "foreign folder":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    assert main([str(REPO / "ablations" / "smoke.yaml"), "--out", str(out), "--wandb", "off"]) == 2
    err = capsys.readouterr().err
    expected = {
        "foreign folder": "holds no grid results",
        "unwritable": "is not writable",
        "a file": f"--out {str(blocker)!r} is a file; give a folder path for --out (a new one, "
        "or this grid's earlier out folder to resume it)",
        "a long name": "--out='rrrrrrrrrrrrrrrrrrrr...rrrrrrrrrrrr': that name is 300 bytes",
    }[case]
    assert expected in err and err.count("\n") == 1
    if case == "foreign folder":
        assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_runs_start_longest_first_by_steps_times_layers():
    from lit_seq.ablate.grid import check_cells
    from lit_seq.ablate.order import longest_first

    spec = parse_spec(
        {
            "name": "order",
            "seeds": [0],
            "blocks": [
                {
                    "name": "short",
                    "overrides": {"steps": 10, "val_every": 5},
                    "axes": {"task": ["echo"], "arch": ["rnn"]},
                },
                {
                    "name": "deep",
                    "overrides": {"steps": 10, "val_every": 5},
                    "axes": {"task": ["echo"], "arch": ["transformer"], "n_layers": [2, 8]},
                },
                {"name": "shipped", "axes": {"task": ["echo"], "arch": ["lstm"]}},
            ],
        },
        "order.yaml",
    )
    runs = check_cells(expand(spec), "order.yaml")
    shipped = yaml.safe_load((REPO / "configs/echo/lstm.yaml").read_text())
    costs = {r.block + str(r.axes.get("n_layers", "")): r.cost for r in runs}
    assert costs["deep8"] == 80 and costs["deep2"] == 20 and costs["short"] == 10
    # from the config file (no override): steps x its own layers
    layers = shipped["model"]["init_args"].get("n_layers", 1)
    assert costs["shipped"] == shipped["trainer"]["max_steps"] * layers
    ordered = longest_first(runs)
    assert [r.index for r in ordered] == sorted(
        (r.index for r in runs), key=lambda i: -runs[i].cost
    )
    assert sorted(r.run_id for r in ordered) == sorted(r.run_id for r in runs)  # same runs


def test_a_bad_cell_is_refused_in_the_words_fit_uses(tmp_path):
    with pytest.raises(BadInput) as fit_error:
        check_config(["--config", "configs/echo/transformer.yaml", "--model.n_heads=5"])
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "name: g\nblocks:\n- {axes: {task: [echo], arch: [transformer], n_heads: [5]}}\n"
    )
    with pytest.raises(BadGrid) as grid_error:
        load_grid(grid)
    assert str(grid_error.value).endswith(f": {fit_error.value}")


# every short axis: where the built objects must show it, and a value that differs from
# signal/transformer's own (written out here, not derived from AXES, so a wrong path fails)
AXIS_PROBES = {
    "arch": ("model", "arch", "lstm"),
    "pos_mode": ("model", "pos_mode", "learnable"),
    "readout": ("model", "readout", "last"),
    "residual": ("model", "residual", False),
    "d_model": ("model", "d_model", 48),
    "n_layers": ("model", "n_layers", 3),
    "n_heads": ("model", "n_heads", 2),
    "dropout": ("model", "dropout", 0.25),
    "lr": ("model", "lr", 0.003),
    "weight_decay": ("model", "weight_decay", 0.01),
    "warmup_steps": ("model", "warmup_steps", 7),
    "steps": ("trainer", "max_steps", 170),
    "val_every": ("trainer", "val_check_interval", 5),
    "batch_size": ("data", "batch_size", 16),
    "data_seed": ("data", "seed", 7),
    "init_seed": ("seeds", "init_seed", 7),  # the seeds the fit resolved (lit_seq.fit.seeds)
}


def _built(cli, where: str, name: str):
    if where == "model":
        return cli.model.hparams[name]
    if where == "seeds":
        return cli.seeds[name]
    return getattr(cli.datamodule if where == "data" else cli.trainer, name)


@pytest.mark.parametrize("key", [k for k in AXES if k != "task"])
def test_every_axis_value_reaches_what_it_names(key, tmp_path):
    """The peer's lesson: an axis that silently never reaches the model is a lost ablation."""
    assert set(AXIS_PROBES) == set(AXES) - {"task"}, "give every axis a probe"
    where, name, value = AXIS_PROBES[key]
    block = {"config": "configs/signal/transformer.yaml", "axes": {key: [value]}}
    [run] = expand(parse_spec({"name": "g", "blocks": [block]}))
    base = ["--config", str(config_file(run.config)), "--wandb=off"]
    cli = build_cli([*base, *run.overrides, f"--run_dir={tmp_path / 'run'}"])
    default = build_cli([*base, f"--run_dir={tmp_path / 'default'}"])
    assert _built(cli, where, name) == value != _built(default, where, name)


def test_a_grid_names_a_known_paper_or_is_refused_with_the_known_ones():
    assert spec()["paper"] is None
    assert spec(paper="deletang2023")["paper"] == "deletang2023"
    with pytest.raises(BadGrid) as error:
        spec(paper="deletang2024")
    assert str(error.value) == (
        "grid: paper='deletang2024' is not a known paper; allowed: ['deletang2023']"
    )


# a grid's cells of one shape (lit_seq.ablate.shapes): built once, each still checked
SHAPES = {
    "name": "shapes",
    "seeds": [0],
    "overrides": {"steps": 5, "val_every": 5},
    "blocks": [
        {
            "name": "opt",
            "axes": {
                "task": ["echo"],
                "arch": ["rnn"],
                "lr": [0.001, 1, "1e-3"],  # 1e-3: a string to YAML, 0.001 to the parser
                "model.init_args.optimizer": ["adam", "adamw"],
                "model.init_args.schedule": ["noam", "constant"],
            },
            "overrides": {"warmup_steps": 3, "weight_decay": 0.1},
        },
        {
            "name": "width",
            "axes": {
                "task": ["echo"],
                "arch": ["transformer"],
                "d_model": [16, 32],
                "warmup_steps": [0, 7],
            },
        },
    ],
}


def _counting_builds(monkeypatch) -> list:
    import lit_seq.ablate.grid as grid

    calls = []

    def counted(args):
        calls.append(args)
        return check_config(args)

    monkeypatch.setattr(grid, "check_config", counted)
    return calls


def test_cells_of_one_shape_are_built_once(monkeypatch):
    from lit_seq.ablate.grid import check_cells

    runs = expand(parse_spec(SHAPES, "shapes.yaml"))
    calls = _counting_builds(monkeypatch)
    checked = check_cells(runs, "shapes.yaml")
    # one build per shape: the opt block, and each d_model of the width block
    assert len(checked) == 3 * 2 * 2 + 2 * 2 and len(calls) == 3
    # every cell computes something of its own, but lr 1e-3, which is lr 0.001
    assert len({r.digest for r in checked}) == len(checked) - 4


@pytest.mark.integration  # builds each of the 16 cells on its own: a few seconds
def test_a_cell_checked_by_its_shape_is_what_its_own_build_says():
    from lit_seq.ablate.grid import check_cells

    checked = check_cells(expand(parse_spec(SHAPES, "shapes.yaml")), "shapes.yaml")
    fields = ("task", "arch", "cost", "pack_key", "digest")
    for run in checked:
        [alone] = check_cells([run], "shapes.yaml")
        assert [getattr(run, f) for f in fields] == [getattr(alone, f) for f in fields], run.run_id


@pytest.mark.parametrize(
    ("axis", "bad", "expected"),
    [
        ("lr", -0.5, "lr=-0.5 must be a finite number > 0.0"),  # the constructor's check
        ("lr", "nan", "model.lr: got 'nan', which is not a valid float"),  # the parser's
        ("warmup_steps", 2.5, "got '2.5', which is not a valid int"),
        ("model.init_args.optimizer", "sgd", "optimizer='sgd' is not one of ['adam', 'adamw']"),
        ("n_heads", 3, "d_model=16 is not divisible by n_heads=3"),  # a shape of its own
    ],
)
def test_one_bad_cell_among_many_of_one_shape_is_refused_by_name(axis, bad, expected, tmp_path):
    values = {
        "lr": [0.001 * (i + 1) for i in range(30)],
        "warmup_steps": list(range(30)),
        "model.init_args.optimizer": ["adam", "adamw"],
        "n_heads": [1, 2, 4],
    }[axis]
    values.insert(len(values) - 1, bad)  # the last but one cell, after many good ones
    block = {"config": "configs/echo/transformer.yaml", "axes": {"d_model": [16], axis: values}}
    grid = tmp_path / "g.yaml"
    grid.write_text(yaml.safe_dump({"name": "g", "seeds": [0, 1], "blocks": [block]}))
    with pytest.raises(BadGrid) as error:
        load_grid(grid)
    name = axis.replace(".init_args.", ".")
    assert str(error.value).startswith(f"g.yaml: block 'block0': cell block0__d_model=16__{name}=")
    assert expected in str(error.value) and "\n" not in str(error.value)
    assert str(error.value).split(": ")[2].endswith(f"{name}={bad}")


def test_a_long_check_says_how_far_it_is(capsys):
    from lit_seq.ablate.grid import _Cells

    cells = _Cells("g.yaml", 10_000, {})
    cells.progress(10)
    assert capsys.readouterr().out == ""  # under a second: nothing
    cells.said -= 1.5
    cells.progress(2_500)
    line = capsys.readouterr().out
    assert line.startswith("g.yaml: checked 2,500 of 10,000 runs (0 built, the others by their")


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"lr": "1", "warmup_steps": "7"}, {"lr": 1.0, "warmup_steps": 7}),
        ({"lr": "1e-3", "optimizer": "adam"}, {"lr": 0.001, "optimizer": "adam"}),
        ({"lr": "nan"}, None),  # the parser's words: the cell is built
        ({"lr": "1e999"}, None),
        ({"lr": "-0"}, None),  # YAML reads 0, Python -0.0: not guessed
        ({"warmup_steps": "010"}, None),  # YAML 1.1 reads 8
        ({"warmup_steps": "2.5"}, None),
        ({"schedule": "step"}, None),
    ],
)
def test_a_shapes_values_are_typed_as_the_parser_types_them_or_not_at_all(values, expected):
    from lit_seq.ablate.shapes import typed

    assert typed(values) == expected
