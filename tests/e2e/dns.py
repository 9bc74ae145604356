"""A private DNS server for the tests: dnsmasq on 127.0.0.1 and a port of its own,
answering only the TXT records it is given, and nothing else (no upstream, no hosts
file, no configuration file)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import servers


class Dns:
    """dnsmasq on `port`; `serve(records)` restarts it with those TXT records."""

    def __init__(self):
        self.port = servers.free_port()
        self.process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def serve(self, records: dict[str, list[str]]) -> None:
        self.stop()
        command = [shutil.which("dnsmasq") or "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null",
                   f"--port={self.port}", "--listen-address=127.0.0.1", "--bind-interfaces", "--no-resolv",
                   "--no-hosts", "--no-poll", "--pid-file=", "--log-facility=-",
                   # Answer for .test itself: a name with no record is NXDOMAIN, not refused.
                   "--local=/test/"]
        for name, texts in records.items():
            for text in texts:
                command.append(f"--txt-record={name},{text}")
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"dnsmasq exited: {self.process.stderr.read().decode()}")
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("dnsmasq did not listen")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None
