"""An OpenID provider whose ID tokens a test makes wrong on purpose, in ways a real
provider never does (another audience, an expired token, a stranger's signature...).
It has no login page: /authorize answers at once with a code for whoever `subject` is.

    with ForgedIdp() as idp:
        idp.mode = "expired"  # the next ID token is expired, otherwise right

Every mode changes exactly one thing of a good token; see MODES.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

MODES = ("good", "wrong_audience", "expired", "bad_signature", "unknown_kid", "other_issuer", "wrong_nonce",
         "no_nonce", "unverified", "no_email", "alg_none", "hs256_with_public_key", "stale_auth_time",
         "no_auth_time")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64int(number: int) -> str:
    return b64url(number.to_bytes((number.bit_length() + 7) // 8, "big"))


def new_key() -> tuple[rsa.RSAPrivateKey, str]:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048), f"key-{secrets.token_hex(4)}"


def rs256(key: rsa.RSAPrivateKey, data: bytes) -> bytes:
    return key.sign(data, padding.PKCS1v15(), hashes.SHA256())


def jws(header: dict, claims: dict, sign) -> str:
    """A compact JWS, built by hand so that it can be wrong in any way asked for."""
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
    return f"{signing_input}.{b64url(sign(signing_input.encode()))}"


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    nonce: str | None
    code_challenge: str
    max_age: str | None = None


class ForgedIdp:
    """A running provider on 127.0.0.1; stop it with stop() or by leaving its `with` block."""

    def __init__(self):
        self.reset()
        self.jwks_fetches = 0
        self._key, self._kid = new_key()
        self._stranger, _ = new_key()  # signs the tokens of the bad-signature modes
        self._grants: dict[str, Grant] = {}
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._http.idp = self
        self.issuer = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        assert mode in MODES, f"unknown mode {mode!r}"
        self._mode = mode

    def reset(self) -> None:
        """Good tokens for the default account."""
        self.mode = "good"
        self.subject = "forged-user"
        self.email = "mallory@forged.test"

    def rotate(self) -> None:
        """Signs with a new key, with a new kid, the only one the JWKS lists from now on."""
        self._key, self._kid = new_key()

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()

    def __enter__(self) -> ForgedIdp:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def metadata(self) -> dict:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid", "email", "profile"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "code_challenge_methods_supported": ["S256"],
        }

    def jwks(self) -> dict:
        with self._lock:
            self.jwks_fetches += 1
        numbers = self._key.public_key().public_numbers()
        return {"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self._kid,
                          "n": b64int(numbers.n), "e": b64int(numbers.e)}]}

    def authorize(self, query: dict) -> tuple[int, dict, dict]:
        """(status, body, headers): a code for the request, or why it is refused."""
        for name, wanted in (("response_type", "code"), ("code_challenge_method", "S256")):
            if query.get(name) != wanted:
                return 400, {"error": "invalid_request", "error_description": f"{name} must be {wanted}"}, {}
        if not query.get("client_id") or not query.get("redirect_uri") or not query.get("code_challenge"):
            return 400, {"error": "invalid_request", "error_description": "client_id, redirect_uri, code_challenge"}, {}
        code = secrets.token_urlsafe(16)
        with self._lock:
            self._grants[code] = Grant(query["client_id"], query["redirect_uri"], query.get("nonce"),
                                       query["code_challenge"], query.get("max_age"))
        answer = {"code": code, "iss": self.issuer} | ({"state": query["state"]} if "state" in query else {})
        separator = "&" if urlsplit(query["redirect_uri"]).query else "?"
        return 303, {}, {"Location": query["redirect_uri"] + separator + urlencode(answer)}

    def token(self, form: dict, authorization: str | None) -> tuple[int, dict]:
        client_id = form.get("client_id")
        if authorization and authorization.startswith("Basic "):
            user = base64.b64decode(authorization[6:]).decode().split(":", 1)[0]
            client_id = unquote(user.replace("+", " "))  # RFC 6749 2.3.1: form-encoded before Base64
        with self._lock:
            grant = self._grants.pop(form.get("code", ""), None)
        verifier = form.get("code_verifier", "")
        if (form.get("grant_type") != "authorization_code" or grant is None or grant.client_id != client_id
                or grant.redirect_uri != form.get("redirect_uri")
                or b64url(hashlib.sha256(verifier.encode()).digest()) != grant.code_challenge):
            return 400, {"error": "invalid_grant"}
        return 200, {"access_token": secrets.token_urlsafe(16), "token_type": "Bearer", "expires_in": 300,
                     "id_token": self.id_token(grant)}

    def id_token(self, grant: Grant) -> str:
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": self.subject, "aud": grant.client_id, "exp": now + 300, "iat": now,
                  "nonce": grant.nonce, "email": self.email, "email_verified": True}
        if grant.max_age is not None:  # the person signed in again just now, as asked
            claims["auth_time"] = now
        claims |= {  # None: the claim is left out
            "wrong_audience": {"aud": "someone-else"},
            "expired": {"exp": now - 600, "iat": now - 900},
            "other_issuer": {"iss": "http://127.0.0.1:1/other"},
            "wrong_nonce": {"nonce": "not-the-nonce"},
            "no_nonce": {"nonce": None},
            "unverified": {"email_verified": False},
            "no_email": {"email": None},
            "stale_auth_time": {"auth_time": now - 3600},
            "no_auth_time": {"auth_time": None},
        }.get(self.mode, {})
        claims = {name: value for name, value in claims.items() if value is not None}
        header = {"alg": "RS256", "typ": "JWT", "kid": self._kid}
        if self.mode == "bad_signature":
            return jws(header, claims, lambda data: rs256(self._stranger, data))
        if self.mode == "unknown_kid":
            return jws(header | {"kid": "not-published"}, claims, lambda data: rs256(self._stranger, data))
        if self.mode == "alg_none":
            return jws({"alg": "none", "typ": "JWT"}, claims, lambda data: b"")
        if self.mode == "hs256_with_public_key":
            # Key confusion: a verifier that takes the published RSA key as an HMAC secret accepts it.
            secret = self._key.public_key().public_bytes(serialization.Encoding.PEM,
                                                         serialization.PublicFormat.SubjectPublicKeyInfo)
            return jws(header | {"alg": "HS256"}, claims, lambda data: hmac.digest(secret, data, "sha256"))
        return jws(header, claims, lambda data: rs256(self._key, data))


class _Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    def do_GET(self) -> None:
        idp: ForgedIdp = self.server.idp
        parts = urlsplit(self.path)
        if parts.path == "/.well-known/openid-configuration":
            self._answer(200, idp.metadata())
        elif parts.path == "/jwks":
            self._answer(200, idp.jwks())
        elif parts.path == "/authorize":
            self._answer(*idp.authorize(dict(parse_qsl(parts.query))))
        else:
            self._answer(404, {"error": "not_found"})

    def do_POST(self) -> None:
        if urlsplit(self.path).path != "/token":
            return self._answer(404, {"error": "not_found"})
        length = int(self.headers.get("Content-Length", 0))
        form = dict(parse_qsl(self.rfile.read(length).decode()))
        self._answer(*self.server.idp.token(form, self.headers.get("Authorization")))

    def _answer(self, status: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        headers = {"Content-Type": "application/json", "Cache-Control": "no-store"} | (headers or {})
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass  # the tests' output is not the place for an access log
