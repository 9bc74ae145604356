"""`agentprocess admin` is one more surface over the organization's operations: every
change it makes is in the organization's audit log, once, as `agentprocess-admin`, with
the kind and target the operation records for every surface; what only reads leaves
nothing; and a refusal is the REST surface's, word for word, and changes nothing. On a
fresh SQLite database and a fresh PostgreSQL database."""

from __future__ import annotations

import base64
import json
import os
import secrets
import sqlite3
import subprocess
from dataclasses import dataclass

try:
    import httpx2 as httpx  # what the venv has (the MCP SDK's client), with httpx's API
except ImportError:
    import httpx
import pytest

import servers
from forged_idp import ForgedIdp

ACTOR = "agentprocess-admin"
PROCESS = """---
name: audited
description: An agent drafts a note and a reviewer approves it.
steps:
  - id: draft
    agent: Draft the note.
  - id: review
    person: reviewer
    approve: Approve the note.
  - id: done
    finish: approved
---

# Audited

The agent drafts; a reviewer approves.
"""


def new_key() -> str:
    return base64.b64encode(secrets.token_bytes(32)).decode()


@dataclass
class Database:
    """A fresh, migrated database and a way to read its audit log as the harness."""

    url: str
    backend: str
    name: str

    def admin(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(servers.BIN / "agentprocess"), "admin", "--database-url", self.url, *args],
            capture_output=True, text=True, env={**os.environ, **(env or {})},
        )

    def entries(self, org: str) -> list[tuple[str, str, str, dict]]:
        """The organization's audit log, oldest first: (actor, kind, target, detail),
        the actor with the address it acted from, if any."""
        columns = "actor || coalesce('@' || address, ''), kind, target, detail"
        where = f"FROM audit_log WHERE org_id = '{org}' ORDER BY id"
        if self.backend == "sqlite":
            with sqlite3.connect(self.name) as connection:
                rows = connection.execute(f"SELECT {columns} {where}").fetchall()
        else:
            text = servers.psql(f"SELECT json_build_array({columns})::text {where}", database=self.name)
            rows = [json.loads(line) for line in text.splitlines() if line]
        return [(actor, kind, target, json.loads(detail)) for actor, kind, target, detail in rows]


@pytest.fixture(params=["sqlite", "postgres"])
def database(request, tmp_path):
    if request.param == "sqlite":
        path = tmp_path / "admin.db"
        db = Database(f"sqlite://{path}?mode=rwc", "sqlite", str(path))
    else:
        name = f"e2e_admin_{secrets.token_hex(6)}"
        servers.psql(f"CREATE DATABASE {name}")
        db = Database(f"{servers.PG}/{name}", "postgres", name)
    migrated = db.admin("migrate")
    assert migrated.returncode == 0, migrated.stderr
    yield db
    if db.backend == "postgres":
        servers.psql(f"DROP DATABASE IF EXISTS {db.name} WITH (FORCE)")


def changed(db: Database, args: list[str], expected: list[tuple[str, str]], env: dict | None = None) -> str:
    """Runs one admin command against `acme` and asserts the audit entries it added are
    `expected` (kind, target), each by `agentprocess-admin` from no address; its output."""
    before = len(db.entries("acme"))
    done = db.admin(*args, env=env)
    assert done.returncode == 0, f"{args}: {done.stderr}"
    added = db.entries("acme")[before:]
    assert [(actor, kind, target) for actor, kind, target, _ in added] == [
        (ACTOR, kind, target) for kind, target in expected], (args, added)
    return done.stdout


def test_every_change_of_the_command_line_is_audited_as_agentprocess_admin(database, tmp_path):
    db = database
    key = new_key()
    folder = tmp_path / "audited"
    folder.mkdir()
    (folder / "PROCESS.md").write_text(PROCESS)

    assert changed(db, ["create-org", "acme", "--name", "Acme"], [("organization.created", "acme")]) \
        == "organization acme created\n"
    assert db.entries("acme")[0][3] == {"slug": "acme", "name": "Acme"}
    changed(db, ["create-group", "--org", "acme", "finance"], [("group.created", "finance")])
    made = changed(db, ["create-identity", "--org", "acme", "--kind", "person", "--person", "Mira@Acme.test", "mira",
                        "--group", "finance", "--group", "reviewers"],
                   [("group.created", "reviewers"), ("member.invited", "mira")])
    assert made == "member mira created\n"
    assert db.entries("acme")[-1][3] == {"email": "mira@acme.test", "role": "member",
                                         "groups": ["finance", "reviewers"]}
    changed(db, ["create-identity", "--org", "acme", "--kind", "agent", "bot"], [("agent.created", "bot")])
    token = changed(db, ["issue-token", "--org", "acme", "bot"], [("agent.token_created", "bot")])
    assert token.startswith("apt_")
    changed(db, ["issue-token", "--org", "acme", "mira"], [("member.token_created", "mira")])
    assert changed(db, ["revoke-tokens", "--org", "acme", "mira"], [("identity.tokens_revoked", "mira")]) \
        == "1 token(s) of mira revoked\n"
    # Nothing left to revoke: nothing changed, nothing recorded.
    assert changed(db, ["revoke-tokens", "--org", "acme", "mira"], []) == "0 token(s) of mira revoked\n"
    client = json.loads(changed(db, ["create-client", "--org", "acme", "bot"], [("agent.client_created", "bot")]))
    assert client["clientId"] and client["secret"]

    changed(db, ["import", "--org", "acme", str(folder)], [("process.imported", "audited")])
    changed(db, ["bind", "--org", "acme", "audited", "reviewer", "reviewers"], [("process.role_bound", "audited")])
    changed(db, ["bind-agents", "--org", "acme", "audited", "*", "--agent", "bot"],
            [("process.agents_bound", "audited")])
    assert changed(db, ["publish", "--org", "acme", "audited"], [("process.published", "audited")]) \
        .startswith("audited version 1: ")
    assert "(unchanged)" in changed(db, ["publish", "--org", "acme", "audited"], [])

    before = len(db.entries("acme"))
    added = db.admin("add-webhook", "--org", "acme", "https://hooks.example.com/agentprocess", "--secret-key", key)
    assert added.returncode == 0, added.stderr
    webhook = json.loads(added.stdout)
    assert [(actor, kind, target) for actor, kind, target, _ in db.entries("acme")[before:]] == [
        (ACTOR, "webhook.added", webhook["id"])]
    changed(db, ["remove-webhook", "--org", "acme", webhook["id"]], [("webhook.removed", webhook["id"])])
    hooked = changed(db, ["chat-hook", "--org", "acme", "--group", "finance", "https://chat.example.com/hooks/T0",
                          "--secret-key", key], [("chat_hook.set", "finance")])
    assert json.loads(hooked) == {"group": "finance", "host": "chat.example.com", "kind": "markdown"}
    changed(db, ["remove-chat-hook", "--org", "acme", "--group", "finance"], [("chat_hook.removed", "finance")])
    granted = json.loads(changed(db, ["set-limits", "--org", "acme", "--open-runs", "5"],
                                 [("limits.granted", "acme")]))
    assert granted["granted"]["openRuns"] == 5, granted
    assert db.entries("acme")[-1][3]["reset"] is False

    with ForgedIdp() as idp:
        changed(db, ["set-provider", "--org", "acme", "--issuer", idp.issuer, "--client-id", "rp",
                     "--secret-key", key, "--allow-private-issuers"],
                [("organization.sign_in_changed", "acme")], env={"AGENTPROCESS_IDP_CLIENT_SECRET": "s3cret"})
    rotated = new_key()
    resealed = changed(db, ["reseal", "--secret-key", rotated, "--previous-secret-key", key],
                       [("organization.resealed", "acme")])
    assert resealed == "resealed 0 webhook secret(s), 0 chat hook URL(s) and 1 identity provider secret(s)\n"
    assert db.entries("acme")[-1][3] == {"webhooks": 0, "chatHooks": 0, "providers": 1}
    # Resealed already: nothing more to seal, nothing recorded.
    changed(db, ["reseal", "--secret-key", rotated, "--previous-secret-key", key], [])

    # What only reads leaves nothing.
    for args in (["identities", "--org", "acme"], ["versions", "--org", "acme", "audited"],
                 ["webhooks", "--org", "acme"], ["deliveries", "--org", "acme"], ["limits", "--org", "acme"]):
        changed(db, args, [])


def test_a_refused_command_says_what_rest_says_and_changes_nothing():
    """The same refusal over REST and at the command line, on one database: binding a
    role to a group the organization lacks."""
    server = servers.start_sqlite(None)
    try:
        api = httpx.Client(base_url=f"{server.base}/api/v1", timeout=30,
                           headers={"Authorization": f"Bearer {dev_api_token(server)}"})
        process, draft = next((name, draft) for name, draft in (
            (name, api.get(f"/processes/{name}/draft").json())
            for name in (version["process"] for version in api.get("/processes").json()["items"]))
            if draft["roles"])
        role = draft["roles"][0]["role"]
        audit = api.get("/audit", params={"limit": 200}).json()["items"]

        rest = api.put(f"/processes/{process}/draft/roles/{role}", json={"group": "no-such-group"})
        assert rest.status_code == 400, rest.text
        refusal = rest.json()
        command = subprocess.run(
            [str(servers.BIN / "agentprocess"), "admin", "--database-url", server.database_url,
             "bind", "--org", server.org, process, role, "no-such-group"],
            capture_output=True, text=True,
        )
        assert command.returncode != 0
        said = "; ".join([f"{refusal['code']}: {refusal['message']}", *refusal["issues"]])
        assert command.stderr.strip() == f"agentprocess: {said}", (command.stderr, refusal)
        assert "no-such-group" in said

        assert api.get(f"/processes/{process}/draft").json() == draft
        assert api.get("/audit", params={"limit": 200}).json()["items"] == audit
        # No organization may name an identity as the platform's operator is named.
        taken = api.post("/agents", json={"id": ACTOR})
        assert taken.status_code == 400 and ACTOR in " ".join(taken.json()["issues"]), taken.text
    finally:
        server.stop()


def dev_api_token(server: servers.Server) -> str:
    details = json.loads((server.workdir / "details.json").read_text())
    return details["identities"]["admin"]["apiToken"]
