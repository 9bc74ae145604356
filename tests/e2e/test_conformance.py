"""`agentprocess conformance` against this server: on `agentprocess dev` (SQLite) and
on two `agentprocess-api` processes over one PostgreSQL database (the sessions spread
over both), every case passes with an empty expected-failures list. Then the runner
itself: it covers every route of its own corpus (tests/conformance-corpus), finds the
work item two people share by walking agents' steps first, a broken contract fails
it, and its expected-failures list must stay true."""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

import servers
from client import SCHEMAS
from servers import BIN, FIXTURES


def credentials(server, path: Path) -> Path:
    """The credentials file, in the shape `agentprocess dev --details` writes."""
    identities = {}
    for name, (kind, person, _) in servers.IDENTITIES.items():
        entry = {"kind": kind, "token": server.tokens[name]}
        if person:
            entry["person"] = person
        identities[name] = entry
    path.write_text(json.dumps({"identities": identities}))
    return path


CORPUS = Path(__file__).resolve().parents[1] / "conformance-corpus"


def conformance(server, tmp_path: Path, *extra: str, schemas: Path = SCHEMAS,
                fixtures: Path = FIXTURES) -> subprocess.CompletedProcess:
    command = [str(BIN / "agentprocess"), "conformance", "--credentials", str(credentials(server, tmp_path / "c.json")),
               "--schemas", str(schemas), "--fixtures", str(fixtures)]
    for index, base in enumerate(server.bases):
        command += ["--url", server.mcp_url(index), "--test-clock", f"{base}/test/clock"]
    return subprocess.run([*command, *extra], capture_output=True, text=True, timeout=900)


def test_every_case_passes_with_an_empty_expected_failures_list(server, tmp_path):
    expected = tmp_path / "expected.yaml"
    expected.write_text("")
    junit = tmp_path / "junit.xml"
    ran = conformance(server, tmp_path, "--expected-failures", str(expected), "--junit", str(junit))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    summary = ran.stdout.strip().splitlines()[-1]
    assert summary.startswith("conformance: ") and ", 0 failed," in summary, ran.stdout
    lines = ran.stdout.splitlines()
    # Every published fixture is walked and passes; the one needing check-1 is skipped.
    for fixture in sorted(p.name for p in FIXTURES.iterdir()):
        verdict = "skip" if fixture == "vendor-check" else "pass"
        assert any(line.startswith(f"{verdict}  walk/{fixture} ") or line.startswith(f"{verdict}  catalog/{fixture} ")
                   for line in lines), (fixture, ran.stdout)
    for case in ("races/parallel-claims-give-one-token", "errors/already-decided-for-a-second-group-member",
                 "errors/run-ended-checked-before-everything-else", "replays/claim-returns-the-original-token",
                 "leases/an-ended-lease-is-stale-and-hands-on-its-progress",
                 "evidence/a-file-url-serves-the-uploaded-bytes", "lists/get-work-pages-oldest-first-with-its-cursor",
                 "lists/list-runs-filters-by-process-state-and-inputs", "timers/a-due-step-turns-overdue-and-stays-open"):
        assert f"pass  {case} " in ran.stdout, (case, ran.stdout)
    suite = ElementTree.parse(junit).getroot()
    assert suite.get("failures") == "0" and int(suite.get("tests")) == len(suite.findall("testcase"))


def test_a_result_that_breaks_the_contract_fails_its_case(server, tmp_path):
    schemas = tmp_path / "schemas"
    shutil.copytree(SCHEMAS, schemas)
    describe = json.loads((schemas / "tools" / "describe.result.json").read_text())
    describe["required"].append("conformanceProbe")
    (schemas / "tools" / "describe.result.json").write_text(json.dumps(describe))
    ran = conformance(server, tmp_path, "--only", "surface/*", schemas=schemas)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    # describe is read before any case runs; its failure is reported as a case.
    assert "FAIL  surface/describe-and-catalog" in ran.stdout and "conformanceProbe" in ran.stdout, ran.stdout
    assert ran.stdout.strip().endswith("conformance: 0 passed, 1 failed, 0 skipped"), ran.stdout


@pytest.mark.parametrize(("listed", "code"), [("errors/not-found-run", 1), ("errors/no-such-case", 0)])
def test_a_listed_case_that_passes_fails_the_run(server, tmp_path, listed, code):
    expected = tmp_path / "expected.yaml"
    expected.write_text(f"- case: {listed}\n  reason: listed for the test\n")
    ran = conformance(server, tmp_path, "--only", "errors/not-found*", "--expected-failures", str(expected))
    assert ran.returncode == code, ran.stdout + ran.stderr
    if code:
        assert "listed in the expected failures, but it passes now" in ran.stdout


def test_an_only_pattern_that_matches_no_case_fails_the_run(server, tmp_path):
    ran = conformance(server, tmp_path, "--only", "walk/no-such-process")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert ran.stderr.strip() == 'agentprocess conformance: no case matches --only "walk/no-such-process"'


def test_bad_credentials_are_refused_naming_every_problem(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"identities": {"a": {"kind": "agent", "token": "t"}}}))
    ran = subprocess.run([str(BIN / "agentprocess"), "conformance", "--credentials", str(path), "--url",
                          "http://127.0.0.1:9/mcp"], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2
    assert "two identities of kind agent are needed, found 1" in ran.stderr
    assert "an identity of kind operator is needed" in ran.stderr


@pytest.fixture(scope="module")
def corpus_server():
    # grant-screening needs check-1: the server judges with the test-double evaluator
    # (not a model; it passes the runner's sample summaries).
    double, url = servers.start_test_evaluator()
    started = servers.start_sqlite(processes=CORPUS, extra=("--evaluator-url", url, "--evaluator-model", "test-double"))
    yield started
    servers.drop(started)
    double.terminate()


def test_the_runner_takes_every_route_of_its_own_corpus_and_finds_shared_work_by_shape(corpus_server, tmp_path):
    expected = tmp_path / "expected.yaml"
    expected.write_text("")
    ran = conformance(corpus_server, tmp_path, "--expected-failures", str(expected), fixtures=CORPUS)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    for folder in sorted(path for path in CORPUS.iterdir() if path.is_dir()):
        routes = (folder / "PROCESS.md").read_text().count("{ to:")
        assert f"pass  walk/{folder.name} " in ran.stdout, (folder.name, ran.stdout)
        assert f"{routes} of {routes} routes taken" in ran.stdout, (folder.name, ran.stdout)
    # The runner read grant-screening's check record on every checked step (agents'
    # steps, in a branch, advisory, a person's task) and found each as check-1 says.
    assert "check records read: budget pass, budget_fix pass, eligibility pass, references pass" in ran.stdout, \
        ran.stdout
    # claim-routing's large_travel is reached only by the third route of two steps in
    # turn, which eight round-robin walks never take: walks aimed at its routes do.
    assert "(aimed at large_travel → adjuster): classify → travel, large_travel → adjuster, travel → large_travel" \
        in ran.stdout, ran.stdout
    assert "(aimed at large_travel → fraud_check)" in ran.stdout, ran.stdout
    # No corpus process starts with a person's step: these cases found their work item
    # by walking agents' steps up to one.
    for case in ("errors/already-decided-for-a-second-group-member",
                 "races/two-people-deciding-one-item-give-one-decision", "errors/forbidden-agent-decides"):
        assert f"pass  {case} " in ran.stdout, (case, ran.stdout)


def test_the_runner_reads_unsure_verdicts_and_escalates_a_failed_check(tmp_path):
    # The test double answers every yes/no question 0.7, and every choice and level
    # unsure. eligibility's and budget_fix's checks are unsure: each escalates its step
    # (a person's task too) and records its verdict. budget's short-form question has no
    # `fail` threshold, so 0.7 fails it: the submission is refused and the runner
    # escalates it. The advisory references check records its fail and goes on.
    double, url = servers.start_test_evaluator("--always", "unsure")
    server = servers.start_sqlite(processes=CORPUS, extra=("--evaluator-url", url, "--evaluator-model", "test-double"))
    try:
        ran = conformance(server, tmp_path, "--only", "walk/grant-screening", fixtures=CORPUS)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert "4 of 4 routes taken" in ran.stdout, ran.stdout
        assert "check records read: budget_fix unsure, eligibility unsure, references fail" in ran.stdout, ran.stdout
    finally:
        servers.drop(server)
        double.terminate()
