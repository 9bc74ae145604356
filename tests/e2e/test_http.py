"""The HTTP edge, spoken to directly: bearer tokens, Host checks, body limits,
malformed JSON-RPC, unknown tools, signed file URLs, health and readiness."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request

import pytest
from mcp import MCPError

from client import request_id
from rawmcp import call_body, post

pytestmark = pytest.mark.anyio

def test_no_token_or_an_unknown_token_is_401_with_a_bearer_challenge(server):
    for token in (None, "apt_not-a-token"):
        status, headers, _ = post(server.base, call_body("describe", {}), token)
        assert status == 401
        assert headers["www-authenticate"].startswith("Bearer")


def test_a_revoked_token_stops_working_once_the_identity_cache_lets_go(server):
    import servers

    name = f"short-lived-{request_id()[:8]}"
    servers.admin(server.database_url, "create-identity", "--org", server.org, "--kind", "agent", name)
    token = servers.admin(server.database_url, "issue-token", "--org", server.org, name).strip()
    assert post(server.base, call_body("describe", {}), token)[0] == 200
    servers.admin(server.database_url, "revoke-tokens", "--org", server.org, name)
    server.advance(11)  # identities are remembered for 10 s
    status, headers, _ = post(server.base, call_body("describe", {}), token)
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")


def test_a_foreign_host_header_is_refused(server):
    status, _, _ = post(server.base, call_body("describe", {}), server.tokens["agent-1"], Host="evil.example")
    assert status == 403


def test_a_browser_origin_not_allowed_is_refused(server):
    status, _, _ = post(server.base, call_body("describe", {}), server.tokens["agent-1"], Origin="https://evil.example")
    assert status == 403
    status, _, _ = post(server.base, call_body("describe", {}), server.tokens["agent-1"])
    assert status == 200


def test_a_body_beyond_a_maximal_upload_is_413(server):
    limit = 10 << 20
    body = call_body("upload", {"fileName": "big.bin", "contentType": "application/octet-stream",
                                "contentBase64": "A" * (limit * 2), "requestId": request_id()})
    status, _, _ = post(server.base, body, server.tokens["agent-1"])
    assert status == 413


def test_a_maximal_upload_fits_the_body_limit(server):
    limit = 10 << 20
    body = call_body("upload", {"fileName": "max.bin", "contentType": "application/octet-stream",
                                "contentBase64": base64.b64encode(b"\1" * limit).decode(),
                                "requestId": request_id()})
    status, _, answer = post(server.base, body, server.tokens["agent-1"])
    assert status == 200
    result = json.loads(answer)["result"]["structuredContent"]
    assert result["ok"] and result["data"]["bytes"] == limit


def test_malformed_json_rpc_is_refused_without_a_result(server):
    for body in (b"{not json", b'{"jsonrpc": "2.0", "id": 1}', b"[]"):
        status, _, answer = post(server.base, body, server.tokens["agent-1"])
        # rmcp answers a body it cannot read with 415 rather than a JSON-RPC parse error.
        assert status in (200, 400, 415, 422), (body, status)
        if status == 200:
            assert "error" in json.loads(answer) and "result" not in json.loads(answer), answer


async def test_an_unknown_tool_is_a_json_rpc_error(clients):
    with pytest.raises(MCPError) as raised:
        await clients["agent-1"].session.call_tool("no_such_tool", {})
    assert raised.value.error.code == -32602


async def test_tools_list_offers_the_fourteen_tools_with_their_argument_schemas(clients):
    listed = await clients["agent-1"].session.list_tools()
    described = await clients["agent-1"].call("describe")
    assert [tool.name for tool in listed.tools] == described["tools"]
    assert len(described["tools"]) == 14
    submit = next(tool for tool in listed.tools if tool.name == "submit")
    assert submit.input_schema["required"] == ["token", "output", "summary", "requestId"]
    assert submit.input_schema["additionalProperties"] is False


def test_health_and_readiness(server):
    for path in ("/healthz", "/readyz"):
        with urllib.request.urlopen(f"{server.base}{path}", timeout=10) as response:
            assert response.status == 200


async def test_a_file_url_with_a_bad_or_expired_signature_is_refused(clients, server):
    uploaded = await clients["agent-1"].call(
        "upload", fileName="a.txt", contentType="text/plain",
        contentBase64=base64.b64encode(b"abc").decode(), requestId=request_id(),
    )
    url = f"{server.base}/files/x/{uploaded['id']}?expires=99999999999&signature=00"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, timeout=10)
    assert refused.value.code == 403


def test_json_nested_beyond_the_parser_bound_is_refused_and_the_server_lives_on(server):
    deep = "[" * 100_000 + "]" * 100_000
    body = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe","arguments":{"x":' + deep
            + "}}}").encode()
    status, _, answer = post(server.base, body, server.tokens["agent-1"])
    assert status != 200 or "result" not in json.loads(answer)
    status, _, _ = post(server.base, call_body("describe", {}), server.tokens["agent-1"])
    assert status == 200


# Digits come back as sent. The exponent is spelled the way serde_json writes it
# (`1e400` as `1e+400`): the same number, never rounded and never infinity.
@pytest.mark.parametrize(("number", "echoed"), [
    ("1080.50", "1080.50"), ("0.1000000000000000000001", "0.1000000000000000000001"), ("1e400", "1e+400"),
])
async def test_a_number_comes_back_as_it_was_sent(clients, server, number, echoed):
    from walk import fill

    listed = await clients["alice"].call("list_processes")
    inputs = next(i["inputs"] for i in listed["items"] if i["name"] == "invoice-approval")
    view = await clients["alice"].call("start_run", process="invoice-approval",
                                       inputs=fill(inputs, server.persons), requestId=request_id())
    run_id = view["run"]["id"]
    claim = await clients["agent-1"].call("claim", runId=run_id, stepId="validate", requestId=request_id())
    # Sent as raw JSON text: a JSON library on this side would already rewrite it.
    body = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"submit","arguments":{'
            f'"token":"{claim["token"]}","requestId":"{request_id()}","summary":"Matched.",'
            f'"output":{{"totalUsd":{number},"supplier":"Acme","matchSummary":"ok"}},'
            '"evidence":[{"kind":"link","ref":"erp-1"}],"next":"manager_review","reason":"Small."}}}').encode()
    status, _, answer = post(server.base, body, server.tokens["agent-1"])
    assert status == 200 and b'"ok":true' in answer, answer
    status, _, answer = post(server.base, call_body("get_run", {"runId": run_id}), server.tokens["alice"])
    assert f'"totalUsd":{echoed},'.encode() in answer, answer[:400]
