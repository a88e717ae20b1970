"""The device campaign (issue 41): a GPU loan's calls turned into tests, speed rows and
published Delétang rows, resumable across calls and loans.

    __main__.py   the command: ``run`` one call, ``import`` what it brought back
    stages.py     the stages (GPU tests, speed rows, the chomsky_gpu grid) and the summary
    limited.py    a child process under a time limit, its output streamed into a log
    speed.py      population against solo rows, one JSON line each (a child process)
    grid_call.py  one call's share of a resumable grid: seed, run, mirror, count
    archive.py    a grid's records packed for the trip back, and merged on arrival
    tiny.py       the tiny grid and the stop-and-resume check CI runs on a CPU
"""
