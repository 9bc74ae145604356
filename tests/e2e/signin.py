"""A browser, as far as sign-up, sign-in and the REST admin surface need one: a cookie
jar, the server's forms with their CSRF tokens, and the real OpenID provider's login
and consent forms (idp.py)."""

from __future__ import annotations

import html
import itertools
import re
import secrets
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

import servers
from idp import Idp, httpx, idp_login, start_idp


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]*)"', page)
    assert found, f"no CSRF field in the page: {page[:500]}"
    return html.unescape(found[1])


def problems_of(page: str) -> str:
    """The text of a page's problems box (empty when it has none)."""
    found = re.search(r'(?s)<div class="problems"[^>]*>(.*?)</div>', page)
    return html.unescape(re.sub(r"<[^>]+>", " ", found[1])) if found else ""


class Browser:
    """One person's browser against one server process (`base`)."""

    def __init__(self, base: str):
        self.base = base
        self.client = httpx.Client(timeout=30, follow_redirects=False)
        self.csrf: str | None = None

    def close(self) -> None:
        self.client.close()

    def at(self, base: str) -> Browser:
        """The same browser (its cookies) talking to another process of the server."""
        other = Browser(base)
        other.client.close()
        other.client = self.client
        other.csrf = self.csrf
        return other

    def get(self, path: str, **kwargs) -> httpx.Response:
        return self.client.get(self.base + path, **kwargs)

    def post_form(self, path: str, data: dict, origin: str | None = None) -> httpx.Response:
        return self.client.post(self.base + path, data=data, headers={"Origin": origin or self.base})

    def signup(self, idp, account: str, **form) -> httpx.Response:
        """Fills in and sends the sign-up form, then signs `account` in at `idp`;
        the server's answer to the callback (or to the form, when it refuses it)."""
        page = self.get("/signup")
        assert page.status_code == 200, page.text
        answer = self.post_form("/signup", {"csrf": csrf_of(page.text), **form})
        if answer.status_code != 303:
            return answer
        return self.finish_at_idp(answer, account)

    def start_sign_in(self, who: str, fresh: bool = False, switch: bool = False) -> httpx.Response:
        """Presses the sign-in page's button for `who` (slug or email): the server's
        answer, a redirect to the provider when it starts the sign-in."""
        page = self.get("/login", params={"org": who, **({"fresh": "1"} if fresh else {})})
        assert page.status_code == 200, page.text
        form = {"csrf": csrf_of(page.text), "who": who}
        if fresh:
            form["fresh"] = "1"
        if switch:
            form["switch"] = "1"
        return self.post_form("/login", form)

    def sign_in(self, who: str, account: str) -> httpx.Response:
        """Signs in to the organization named by `who` (slug or email) as `account`."""
        answer = self.start_sign_in(who)
        if answer.status_code != 303:
            return answer
        return self.finish_at_idp(answer, account)

    def callback_url(self, answer: httpx.Response, account: str) -> str:
        """Where the provider sends the browser back after `account` signs in there."""
        callback = idp_login(self.client, answer.headers["location"], account)
        assert urlsplit(callback).path == "/auth/callback", callback
        return callback

    def finish_at_idp(self, answer: httpx.Response, account: str) -> httpx.Response:
        return self.client.get(self.callback_url(answer, account))

    def api(self, method: str, path: str, json=None, headers: dict | None = None) -> httpx.Response:
        """A REST call on the session, as the server's own pages would send it."""
        sent = {"Origin": self.base}
        if method not in ("GET", "HEAD"):
            if self.csrf is None:
                self.csrf = self.client.get(self.base + "/api/v1/session").json()["csrfToken"]
            sent["X-CSRF-Token"] = self.csrf
        sent |= headers or {}
        return self.client.request(method, self.base + "/api/v1" + path, json=json, headers=sent)


def bearer(base: str, token: str, method: str, path: str, json=None) -> httpx.Response:
    """A REST call with an API token and no cookies."""
    return httpx.request(method, base + "/api/v1" + path, json=json, headers={"Authorization": f"Bearer {token}"},
                         timeout=30)


_slugs = (f"org{index}-{secrets.token_hex(3)}" for index in itertools.count())


def new_slug() -> str:
    """A slug no test has used."""
    return next(_slugs)


@dataclass
class Site:
    server: servers.Server
    acme: Idp
    beta: Idp

    @property
    def first(self) -> str:
        return self.server.bases[0]

    @property
    def last(self) -> str:
        return self.server.bases[-1]

    def client_of(self, idp: Idp) -> dict:
        return {"clientId": "agentprocess", "clientSecret": "s3cret", "issuer": idp.issuer}


def idp_for(bases: list[str], accounts: dict, port: int = 0) -> Idp:
    """A provider with the clients the sign-in tests use: `agentprocess` (confidential)
    and `public` registered for every process of the server, `elsewhere` registered for
    another redirect URI only."""
    return start_idp(
        [
            {"client_id": "agentprocess", "client_secret": "s3cret",
             "redirect_uris": [f"{base}/auth/callback" for base in bases]},
            {"client_id": "public", "redirect_uris": [f"{base}/auth/callback" for base in bases]},
            {"client_id": "elsewhere", "client_secret": "x", "redirect_uris": ["http://127.0.0.1:9/cb"]},
        ],
        accounts,
        port=port,
    )


def signed_up(site: Site, idp: Idp | None = None, account: str = "ann") -> tuple[Browser, str]:
    """A new organization signed up through `idp` (acme's by default) by `account`, who
    is then signed in as its admin; the browser talks to the server's last process."""
    browser = Browser(site.first)
    slug = new_slug()
    answer = browser.signup(idp or site.acme, account, name=f"Org {slug}", slug=slug, **site.client_of(idp or site.acme))
    assert answer.status_code == 303 and answer.headers["location"] == "/inbox", answer.text
    return browser.at(site.last), slug


BETA_ZED = {"zed": {"email": "zed@beta.test", "email_verified": True}}


@contextmanager
def site_for(backend: str, acme_accounts: dict, beta_accounts: dict = BETA_ZED, extra: tuple[str, ...] = ()):
    """A server open to sign-up (servers.start_signup) and two providers, acme's and
    beta's, registered for every one of its processes; all stopped afterwards."""
    server = servers.start_signup(backend, extra=extra)
    site = Site(server, idp_for(server.bases, acme_accounts), idp_for(server.bases, beta_accounts))
    try:
        yield site
    finally:
        site.acme.stop()
        site.beta.stop()
        servers.drop(server)
