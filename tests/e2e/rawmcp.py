"""MCP spoken directly over HTTP, one connection per call: for tests that send what a
well-behaved client would not, or that need the exact headers and `_meta` of a call."""

from __future__ import annotations

import http.client
import json

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-11-25"}


def post(base: str, body: bytes, token: str | None = None, timeout: float = 30, **extra) -> tuple[int, dict, bytes]:
    """POSTs to `base`/mcp; the answer is read even when the server stops reading the
    body early (as it does past the size limit)."""
    headers = dict(HEADERS, **extra)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    connection = http.client.HTTPConnection(base.removeprefix("http://"), timeout=timeout)
    try:
        connection.putrequest("POST", "/mcp", skip_host="Host" in headers)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders()
        try:
            connection.send(body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def call_body(tool: str, arguments: dict, meta: dict | None = None) -> bytes:
    params: dict = {"name": tool, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()


def call(base: str, token: str, tool: str, arguments: dict, meta: dict | None = None, timeout: float = 30,
         **headers) -> dict:
    """A tool call's `{ ok, ... }` result."""
    status, _, body = post(base, call_body(tool, arguments, meta), token, timeout=timeout, **headers)
    assert status == 200, (status, body)
    return json.loads(body)["result"]["structuredContent"]
