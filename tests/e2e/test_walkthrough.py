"""The README's walkthrough script works against the dev server as written: plain
`agentprocess dev`, which publishes the built-in examples and writes the details file."""

from __future__ import annotations

import subprocess

from servers import REPO


def test_the_readme_walkthrough_takes_a_run_to_its_finish(examples_server):
    completed = subprocess.run(
        [str(REPO / "examples" / "walkthrough.sh"), str(examples_server.workdir / "details.json")],
        capture_output=True, text=True, timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert "consumed by supplier_confirmation" in completed.stdout, completed.stdout
    assert "run ended, outcome ordered" in completed.stdout, completed.stdout
