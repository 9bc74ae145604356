"""The README's walkthrough script works against the dev server as written."""

from __future__ import annotations

import subprocess

from servers import REPO

# The walkthrough is written for `agentprocess dev`, which writes the details file.
BACKENDS = ["sqlite"]


def test_the_readme_walkthrough_takes_a_run_to_its_finish(server):
    completed = subprocess.run(
        [str(REPO / "examples" / "walkthrough.sh"), str(server.workdir / "details.json")],
        capture_output=True, text=True, timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert "run ended, outcome closed" in completed.stdout, completed.stdout
