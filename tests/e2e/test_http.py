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


def test_a_foreign_browser_origin_is_refused_and_the_servers_own_passes(server):
    token = server.tokens["agent-1"]
    status, _, _ = post(server.base, call_body("describe", {}), token, Origin="https://evil.example")
    assert status == 403
    status, _, _ = post(server.base, call_body("describe", {}), token, Origin=server.base)
    assert status == 200
    status, _, _ = post(server.base, call_body("describe", {}), token)
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


@pytest.mark.parametrize(("body", "code"), [
    (b"{not json", -32700),
    (b"", -32700),
    (b"\xff\xfe", -32700),
    (b"[]", -32600),
    (b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', -32600),
    (b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}', -32600),
    (b'{"jsonrpc":"2.0","id":1}', -32600),
    (b'"tools/list"', -32600),
])
def test_a_body_that_is_not_one_json_rpc_message_is_400_with_a_json_rpc_error(server, body, code):
    status, headers, answer = post(server.base, body, server.tokens["agent-1"])
    assert status == 400, (status, answer)
    assert headers["content-type"].startswith("application/json")
    error = json.loads(answer)
    assert error["jsonrpc"] == "2.0" and error["error"]["code"] == code and error["error"]["message"], error
    assert "result" not in error
    # The request's id when it could be read, else null (JSON-RPC 2.0 §5).
    readable = json.loads(body) if body.startswith(b"{") and b"not json" not in body else {}
    assert error["id"] == readable.get("id"), error


@pytest.mark.parametrize("params", [{"name": "describe", "arguments": 5}, {"name": 3}, None])
def test_a_tool_call_whose_params_do_not_fit_is_a_json_rpc_invalid_params_error(server, params):
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
    if params is not None:
        message["params"] = params
    status, _, answer = post(server.base, json.dumps(message).encode(), server.tokens["agent-1"])
    assert status == 200, (status, answer)
    error = json.loads(answer)
    assert error["id"] == 7 and error["error"]["code"] == -32602 and "result" not in error, error


async def test_an_unknown_tool_is_a_json_rpc_error(clients):
    with pytest.raises(MCPError) as raised:
        await clients["agent-1"].session.call_tool("no_such_tool", {})
    assert raised.value.error.code == -32602


async def test_tools_list_offers_the_fourteen_tools_with_their_argument_schemas(clients):
    listed = await clients["agent-1"].session.list_tools()
    described = await clients["agent-1"].call("describe")
    assert [tool.name for tool in listed.tools] == described["tools"]
    assert len(described["tools"]) == 14
    from client import SCHEMAS

    # The official argument schema of each tool, descriptions aside (the Rust suite
    # compares them structurally; here, as a client receives them).
    def bare(schema):
        """The schema without annotations; names under `properties` are kept."""
        if not isinstance(schema, dict):
            return schema
        kept = {}
        for key, value in schema.items():
            if key in ("$schema", "$id", "title", "description"):
                continue
            if key == "properties":
                kept[key] = {name: bare(member) for name, member in value.items()}
            elif isinstance(value, dict):
                kept[key] = bare(value)
            else:
                kept[key] = value
        return kept

    for tool in listed.tools:
        official = json.loads((SCHEMAS / "tools" / f"{tool.name}.arguments.json").read_text())
        assert bare(tool.input_schema) == bare(official), tool.name


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


# A number comes back byte for byte as it was sent (READINGS 10): digits, exponent
# letter and exponent sign alike.
@pytest.mark.parametrize(("number", "echoed"), [
    ("1080.50", "1080.50"), ("0.1000000000000000000001", "0.1000000000000000000001"), ("1e400", "1e400"),
    ("1E5", "1E5"), ("2.50E-3", "2.50E-3"), ("1e+2", "1e+2"),
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


@pytest.mark.parametrize("arguments", [
    {"runId": "r_\u0000"},
])
def test_a_nul_character_in_a_string_argument_is_invalid_not_retry(server, arguments):
    status, _, answer = post(server.base, call_body("get_run", arguments), server.tokens["alice"])
    assert status == 200
    result = json.loads(answer)["result"]["structuredContent"]
    assert result["error"]["code"] == "invalid", result
    assert result["error"]["issues"] == ["runId: must not contain the character U+0000"]


def test_a_nul_character_is_refused_on_every_tool_that_writes(server):
    token = server.tokens["alice"]
    for tool, arguments, issue in [
        ("start_run", {"process": "invoice-approval", "inputs": {}, "requestId": "q\u0000"},
         "requestId: must not contain the character U+0000"),
        ("start_run", {"process": "invoice\u0000", "inputs": {}, "requestId": request_id()},
         "process: must not contain the character U+0000"),
        ("list_runs", {"inputs": {"a\u0000": 1}}, "inputs.a\\0: a member name must not contain the character U+0000"),
    ]:
        status, _, answer = post(server.base, call_body(tool, arguments), token)
        result = json.loads(answer)["result"]["structuredContent"]
        assert result["error"]["code"] == "invalid" and issue in result["error"]["issues"], (tool, result)
