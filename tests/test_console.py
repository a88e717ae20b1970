"""Tables printed into a pipe (CI, ``tee``, a log file) keep their headers whole."""

from rich.console import Console

from lit_seq.results.tables import aggregate_table, print_aggregate, runs_table, task_summaries
from lit_seq.util.console import PIPE_WIDTH, output_console
from tests.helpers import arch_record

METRICS = {f"test_len{n}/acc": 0.5 for n in (40, 80, 160, 320, 640)} | {"test/acc": 0.9}


def _aggregate():
    records = [
        arch_record("very_long_block_name", "cycle_navigation", arch, seed, METRICS, index=i)
        for i, arch in enumerate(["linear_attention", "transformer", "ndstack_rnn"])
        for seed in (0, 1, 2)
    ]
    return aggregate_table(runs_table(records))


def test_a_piped_console_is_wide_unless_columns_says_otherwise(monkeypatch, capsys):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert output_console().width == PIPE_WIDTH  # capsys: stdout is no terminal
    monkeypatch.setenv("COLUMNS", "120")
    assert output_console().width == 120


def test_the_aggregate_printed_into_a_pipe_keeps_every_header_whole(monkeypatch, capsys):
    monkeypatch.delenv("COLUMNS", raising=False)
    aggregate = _aggregate()
    [(_, header, _)] = task_summaries(aggregate, per_seed=False)
    print_aggregate(aggregate)
    lines = capsys.readouterr().out.splitlines()
    [head] = [line for line in lines if header[0] in line and header[-1] in line]
    assert all(column in head for column in header), head  # one line, no name cut or wrapped
    # what a plain rich console gave in a pipe: 80 columns, names broken over lines
    narrow = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    print_aggregate(aggregate, narrow)
    assert not [
        line
        for line in narrow.export_text().splitlines()
        if header[-1] in line and header[0] in line
    ]
