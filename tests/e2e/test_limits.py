"""Limits per organization through the built binaries: the platform grants one
organization limits with `agentprocess admin set-limits`; over one, its agent (the
official MCP client) is answered `retry` on the official error schema and the REST
upload 429, while another organization of the same server goes on."""

from __future__ import annotations

import base64
import json
import secrets
from contextlib import AsyncExitStack

import pytest

import servers
from client import connect, request_id
from rawmcp import post_form

pytestmark = pytest.mark.anyio


def upload(text: str) -> dict:
    return {"requestId": request_id(), "fileName": "note.txt", "contentType": "text/plain",
            "contentBase64": base64.b64encode(text.encode()).decode()}


async def test_an_organization_over_its_granted_limits_gets_retry_and_another_goes_on(server):
    org = f"limited-{secrets.token_hex(3)}"
    servers.admin(server.database_url, "create-org", org)
    servers.admin(server.database_url, "create-identity", "--org", org, "--kind", "agent", "bot")
    token = servers.admin(server.database_url, "issue-token", "--org", org, "bot").strip()
    granted = json.loads(servers.admin(server.database_url, "set-limits", "--org", org,
                                       "--writes-per-second", "1", "--stored-bytes", "10"))
    assert granted["granted"] == {"writesPerSecond": 1, "storedBytes": 10}, granted
    shown = json.loads(servers.admin(server.database_url, "limits", "--org", org))
    assert shown["granted"] == granted["granted"] and shown["chosen"] == {}
    with pytest.raises(RuntimeError, match="no organization"):
        servers.admin(server.database_url, "set-limits", "--org", "no-such-org", "--open-runs", "5")

    async with AsyncExitStack() as stack:
        bot = await connect(stack, server.mcp_url(), token, "bot")
        neighbour = await connect(stack, server.mcp_url(), server.tokens["agent-1"], "agent-1")
        await bot.call("upload", **upload("12345678"))
        # The cap: 8 of 10 bytes are kept.
        refused = await bot.error("upload", **upload("123"))
        assert refused["code"] == "retry" and refused["issues"][0].startswith("storedBytes:"), refused
        # The rate: one write a second, two at once (the refused upload was one of them).
        refused = await bot.error("upload", **upload("1"))
        assert refused["code"] == "retry" and refused["issues"][0].startswith("writesPerSecond:"), refused
        assert f"organization {org} is at its limit of 1 writes per second" in refused["message"]
        # Reads go on, and so does the other organization.
        assert await bot.call("describe")
        for _ in range(3):
            await neighbour.call("upload", **upload("a neighbour's file"))

    status, body = post_form(f"{server.base}/v1/uploads",
                             {"Authorization": f"Bearer {token}", "Idempotency-Key": request_id()},
                             [("file", "n.txt", b"123", "text/plain")])
    assert status == 429 and body["error"]["code"] == "retry", (status, body)
