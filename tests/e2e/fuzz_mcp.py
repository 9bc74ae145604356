"""A structure-aware fuzzer of the MCP surface: tool calls whose arguments are generated
from the official argument schemas and then mutated, and JSON-RPC framing broken in
the ways a hostile or careless client breaks it. Seeded, so a failure replays.

Each case is one request; the oracle (`Verdict`) holds for every answer: no 5xx other
than a deliberate 503, an answer within the deadline, and a tool result that is either
on the tool's official result schema or a refusal on `tool-error.json`.
"""

from __future__ import annotations

import json
import random
import string
import time
from collections import Counter
from dataclasses import dataclass, field

import rawmcp
from client import SCHEMAS, check_result

TOOLS = {
    tool: json.loads((SCHEMAS / files["arguments"]).read_text())
    for tool, files in json.loads((SCHEMAS / "index.json").read_text())["tools"].items()
}

# Numbers and strings that have broken JSON servers: beyond 64 bits, beyond doubles,
# negative zero, lone surrogates (not UTF-8 once decoded), control characters.
ODD_NUMBERS = ["1e400", "-1e400", "1e-400", "-0", "0.0", "18446744073709551616", "-9223372036854775809",
               "9007199254740993", "1.7976931348623157e308", "123456789012345678901234567890.5"]
ODD_STRINGS = ["", " ", "\u0000", "\ud800", "\udfff\ud800", "\u202e", "a" * 129, "ü" * 300, "../../etc/passwd",
               "r_' OR '1'='1", "%00", "\r\n\r\n", "{{7*7}}", "${jndi:ldap://x}"]


class Generator:
    """Values for a JSON Schema (the subset the official argument schemas use), valid
    by construction, with ids the server knows where it helps reach deeper code."""

    def __init__(self, rng: random.Random, known: dict[str, list[str]]) -> None:
        self.rng = rng
        self.known = known

    def value(self, schema: dict, name: str = "", depth: int = 0):
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = self.rng.choice(kind)
        if kind == "object" or (kind is None and "properties" in schema):
            return self.object(schema, depth)
        if kind == "array":
            items = schema.get("items", {})
            return [self.value(items, name, depth + 1) for _ in range(self.rng.randint(0, 3))]
        if kind == "string":
            return self.string(schema, name)
        if kind == "integer":
            low = schema["exclusiveMinimum"] + 1 if "exclusiveMinimum" in schema else schema.get("minimum", 0)
            return self.rng.randint(int(low), int(min(schema.get("maximum", 1000), 1000)))
        if kind == "number":
            return round(self.rng.uniform(-1000, 1000), self.rng.randint(0, 4))
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "null":
            return None
        return self.free(depth)

    def object(self, schema: dict, depth: int) -> dict:
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        found = {}
        for key, sub in properties.items():
            if key in required or self.rng.random() < 0.5:
                found[key] = self.value(sub, key, depth + 1)
        if not properties and schema.get("additionalProperties", True) is not False and depth < 4:
            for _ in range(self.rng.randint(0, 3)):
                found[self.word()] = self.free(depth + 1)
        return found

    def string(self, schema: dict, name: str) -> str:
        pool = self.known.get(name)
        if pool and self.rng.random() < 0.8:
            return self.rng.choice(pool)
        low, high = schema.get("minLength", 0), min(schema.get("maxLength", 24), 24)
        return "".join(self.rng.choice(string.ascii_letters + string.digits + "-_:.")
                       for _ in range(self.rng.randint(low, max(low, high))))

    def free(self, depth: int):
        """Any JSON value, for the free-form parts (inputs, output, event data)."""
        choice = self.rng.randint(0, 6 if depth < 4 else 3)
        if choice == 0:
            return self.rng.randint(-10**6, 10**6)
        if choice == 1:
            return self.word()
        if choice == 2:
            return self.rng.random() < 0.5
        if choice == 3:
            return None
        if choice == 4:
            return [self.free(depth + 1) for _ in range(self.rng.randint(0, 3))]
        return {self.word(): self.free(depth + 1) for _ in range(self.rng.randint(0, 3))}

    def word(self) -> str:
        return "".join(self.rng.choice(string.ascii_lowercase) for _ in range(self.rng.randint(1, 8)))


@dataclass
class Case:
    """One request: its kind, the tool it names (if any) and the raw body."""

    kind: str
    tool: str | None
    body: bytes


def mutated_arguments(rng: random.Random, generator: Generator, tool: str) -> tuple[str, dict | str]:
    """A tool's valid arguments, then (mostly) one mutation; as a dict, or as raw JSON
    text where the mutation is in the text itself."""
    schema = TOOLS[tool]
    arguments = generator.value(schema)
    properties = list(schema.get("properties", {}))
    mutation = rng.choice(["none", "drop", "wrong type", "unknown", "odd string", "odd number", "long string",
                           "deep", "null"])
    if mutation == "drop" and schema.get("required"):
        arguments.pop(rng.choice(schema["required"]), None)
    elif mutation == "wrong type" and properties:
        arguments[rng.choice(properties)] = rng.choice([[], {}, 5, True, None, "x", 1.5])
    elif mutation == "unknown":
        arguments[generator.word() + "_"] = generator.free(0)
    elif mutation == "odd string" and properties:
        arguments[rng.choice(properties)] = rng.choice(ODD_STRINGS)
    elif mutation == "long string" and properties:
        key = rng.choice(properties)
        bound = schema["properties"][key].get("maxLength", 128)
        arguments[key] = "x" * rng.choice([bound, bound + 1, 70_000])
    elif mutation in ("odd number", "deep"):
        # Written into the text: Python's json would change the number, or not nest so deep.
        depth = rng.choice([50, 127, 129, 1_000])
        odd = rng.choice(ODD_NUMBERS) if mutation == "odd number" else "[" * depth + "]" * depth
        text = json.dumps(dict(arguments, **{rng.choice(properties) if properties else "x": "__odd__"}))
        return mutation, text.replace('"__odd__"', odd)
    elif mutation == "null" and properties:
        arguments[rng.choice(properties)] = None
    return mutation, arguments


def framing(rng: random.Random) -> tuple[str, bytes]:
    """A body whose JSON-RPC framing (not its arguments) is what is wrong."""
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "describe", "arguments": {}}}
    kind = rng.choice(["not json", "invalid utf-8", "truncated", "wrong version", "no method", "object id",
                       "batch", "params not object", "arguments not object", "unknown tool", "unknown method",
                       "empty", "huge", "nested body", "nul in name", "duplicate keys"])
    text = json.dumps(call)
    body = {
        "not json": b"{this is not json",
        "invalid utf-8": text.replace("describe", "desc\udcff").encode("utf-8", "surrogateescape"),
        "truncated": text[: rng.randint(1, len(text) - 1)].encode(),
        "wrong version": json.dumps(dict(call, jsonrpc="1.0")).encode(),
        "no method": json.dumps({k: v for k, v in call.items() if k != "method"}).encode(),
        "object id": json.dumps(dict(call, id={"a": [1]})).encode(),
        "batch": json.dumps([call, call]).encode(),
        "params not object": json.dumps(dict(call, params=[1, 2])).encode(),
        "arguments not object": json.dumps(dict(call, params={"name": "describe", "arguments": "x"})).encode(),
        "unknown tool": json.dumps(dict(call, params={"name": "drop_tables", "arguments": {}})).encode(),
        "unknown method": json.dumps(dict(call, method="resources/delete")).encode(),
        "empty": b"",
        "huge": json.dumps(dict(call, params={"name": "describe", "arguments": {"x": "y" * (20 << 20)}})).encode(),
        "nested body": ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe","arguments":'
                        + "[" * 5_000 + "]" * 5_000 + "}}").encode(),
        "nul in name": json.dumps(dict(call, params={"name": "desc\u0000ribe", "arguments": {}})).encode(),
        "duplicate keys": b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe","name":"x",'
                          b'"arguments":{}}}',
    }[kind]
    return kind, body


def cases(seed: int, count: int, known: dict[str, list[str]]):
    """`count` cases from `seed`: three in four are tool calls with generated arguments."""
    rng = random.Random(seed)
    generator = Generator(rng, known)
    for _ in range(count):
        if rng.random() < 0.75:
            tool = rng.choice(sorted(TOOLS))
            mutation, arguments = mutated_arguments(rng, generator, tool)
            text = arguments if isinstance(arguments, str) else json.dumps(arguments)
            body = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":' + json.dumps(tool)
                    + ',"arguments":' + text + "}}").encode()
            yield Case(f"{tool}: {mutation}", tool, body)
        else:
            kind, body = framing(rng)
            yield Case(f"framing: {kind}", None, body)


@dataclass
class Verdict:
    """What the answers were, and every one that broke the oracle."""

    statuses: Counter = field(default_factory=Counter)
    codes: Counter = field(default_factory=Counter)
    slowest: float = 0.0
    broken: list[str] = field(default_factory=list)

    def judge(self, case: Case, status: int, body: bytes, took: float, deadline: float) -> None:
        self.statuses[status] += 1
        self.slowest = max(self.slowest, took)
        if took > deadline:
            self.broken.append(f"{case.kind}: answered after {took:.1f} s")
        if status >= 500 and status != 503:
            self.broken.append(f"{case.kind}: HTTP {status} {body[:200]!r}")
            return
        if status != 200 or case.tool is None:
            return
        try:
            answer = json.loads(body)
        except ValueError:
            self.broken.append(f"{case.kind}: 200 with a body that is not JSON: {body[:200]!r}")
            return
        if "result" not in answer:
            self.codes[f"JSON-RPC {answer.get('error', {}).get('code')}"] += 1
            return
        result = answer["result"].get("structuredContent")
        try:
            check_result(case.tool, result, bool(answer["result"].get("isError")))
        except Exception as error:  # noqa: BLE001 - any failure of the check is a finding
            self.broken.append(f"{case.kind}: off the official schemas: {error!s:.300}")
            return
        self.codes["ok" if result["ok"] else result["error"]["code"]] += 1


def run(base: str, token: str, seed: int, count: int, known: dict[str, list[str]],
        deadline: float = 30.0) -> Verdict:
    verdict = Verdict()
    for case in cases(seed, count, known):
        started = time.monotonic()
        try:
            status, _, body = rawmcp.post(base, case.body, token, timeout=deadline + 5)
        except OSError as error:
            verdict.broken.append(f"{case.kind}: no answer ({error})")
            continue
        verdict.judge(case, status, body, time.monotonic() - started, deadline)
    return verdict
