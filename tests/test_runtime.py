"""lit_seq.util.runtime: how a grid worker ends."""

import subprocess
import sys

import pytest

from tests.helpers import REPO

ENDS = """
import atexit
from lit_seq.util.runtime import exit_now
atexit.register(lambda: print("atexit ran"))
print("written, not yet flushed: ", end="")
exit_now(3)
print("never")
"""


def test_exit_now_runs_the_atexit_handlers_flushes_and_exits_with_the_code():
    done = subprocess.run(
        [sys.executable, "-c", ENDS], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout == "written, not yet flushed: atexit ran\n"


@pytest.mark.parametrize(
    ("body", "status", "stderr"),
    [
        ("return None", 0, ""),
        ("return 4", 4, ""),
        ("raise SystemExit(2)", 2, ""),
        ("raise SystemExit('lit_seq.x: error: one line')", 1, "lit_seq.x: error: one line\n"),
    ],
)
def test_a_command_ends_with_the_status_its_main_gives(body, status, stderr):
    command = f"from lit_seq.util.runtime import end_with\ndef main():\n    {body}\nend_with(main)"
    done = subprocess.run(
        [sys.executable, "-c", command], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stderr) == (status, stderr)
