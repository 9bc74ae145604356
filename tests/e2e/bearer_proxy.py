"""A small HTTP proxy that adds `Authorization: Bearer <token>` to every request and
forwards it unchanged otherwise (Host and Origin included, so that the server's own
checks still see what the client sent). For clients that cannot send a bearer token
themselves, such as the official MCP conformance suite."""

from __future__ import annotations

import http.client
import http.server
import itertools
import threading

# Hop-by-hop headers (RFC 9110 §7.6.1) and the ones the proxy sets itself.
SKIPPED = {"connection", "keep-alive", "transfer-encoding", "content-length", "authorization", "te", "upgrade"}


class BearerProxy:
    """Listens on 127.0.0.1 (a free port, known at once) and forwards to the `targets`
    (`host:port`) in turn, one request each, with `token`; both may be set after it was
    made. Several targets spread the calls over the processes of one server."""

    def __init__(self, targets: tuple[str, ...] = (), token: str = ""):
        self.targets = list(targets)
        self.token = token
        self.turn = itertools.count()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                target = proxy.targets[next(proxy.turn) % len(proxy.targets)]
                host, port = target.rsplit(":", 1)
                connection = http.client.HTTPConnection(host, int(port), timeout=60)
                connection.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for name, value in self.headers.items():
                    if name.lower() not in SKIPPED:
                        connection.putheader(name, value)
                connection.putheader("Authorization", f"Bearer {proxy.token}")
                if body is not None:
                    connection.putheader("Content-Length", str(len(body)))
                connection.endheaders(body)
                response = connection.getresponse()
                data = response.read()
                connection.close()
                self.send_response(response.status)
                for name, value in response.getheaders():
                    if name.lower() not in SKIPPED:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on the answer, as probes do

            do_GET = do_POST = do_DELETE = forward

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> BearerProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
