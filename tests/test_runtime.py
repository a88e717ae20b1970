"""lit_seq.util.runtime: how a grid worker ends."""

import subprocess
import sys

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
