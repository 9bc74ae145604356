"""Parts of the test's own that it may harm: a private PostgreSQL (restarted, its
backends terminated, its connection slots taken, a session left idle in transaction),
a TCP proxy in front of anything (latency, resets, connections gone silent), a
kernel blackhole for the connections open to a port (half-open connections), and a
tarpit (an endpoint that accepts connections and never answers).

None of them touches the machine's shared PostgreSQL or Redis."""

from __future__ import annotations

import asyncio
import errno
import glob
import os
import re
import secrets
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import servers


class PrivatePostgres:
    """A PostgreSQL server of the test's own (initdb in a temporary directory, another
    port), so that stopping or crashing it touches nothing else."""

    def __init__(self, max_connections: int = 100, disk_mb: int | None = None) -> None:
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda path: int(Path(path).parent.name))
        self.bin = Path(os.environ.get("AGENTPROCESS_PG_BIN", bins[-1] if bins else "/usr/bin"))
        self.dir = Path(tempfile.mkdtemp(prefix="agentprocess-e2e-pgdata-"))
        self.port = servers.free_port()
        self.max_connections = max_connections
        # With `disk_mb`, the data directory is on a file system of that size, which a
        # test can fill (mounting it needs root, as CI runs).
        self.disk = self.dir / "disk" if disk_mb else None
        if self.disk:
            self.disk.mkdir()
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={disk_mb}m", "tmpfs", str(self.disk)], check=True)
        self.data = (self.disk or self.dir) / "data"
        # PostgreSQL refuses to run as root.
        self.as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_owner:
            for folder in (self.dir, self.disk):
                if folder:
                    shutil.chown(folder, "postgres", "postgres")
        self.run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        self.roles_made = False
        self.start()

    def run(self, tool: str, *args: str) -> None:
        subprocess.run([*self.as_owner, str(self.bin / tool), *args], check=True, capture_output=True)

    @property
    def base(self) -> str:
        """The server's URL without a database."""
        return f"postgres://postgres@127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/postgres"

    @property
    def application_base(self) -> str:
        """The server's URL for the role the servers connect as."""
        return f"postgres://agentprocess@127.0.0.1:{self.port}"

    def sessions_of(self, role: str) -> int:
        return int(self.sql(f"SELECT count(*) FROM pg_stat_activity WHERE usename = '{role}'").strip())

    def start(self) -> None:
        # Durability stays on (fsync included): an immediate shutdown must be recovered
        # from the write-ahead log as in production.
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                   f"-c max_connections={self.max_connections}")
        if self.disk:
            # Few write-ahead log segments kept, so that a small disk holds them.
            options += " -c max_wal_size=48MB -c min_wal_size=32MB"
        self.run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.dir / "log"), "-w", "start")
        if not self.roles_made:
            # The servers connect as `agentprocess`, as in production not a superuser,
            # so the slots PostgreSQL reserves for superusers stay the harness's.
            self.sql("CREATE ROLE agentprocess LOGIN CREATEDB; CREATE ROLE hog LOGIN")
            self.roles_made = True

    def stop(self, mode: str = "fast") -> None:
        """`fast` rolls back open transactions and closes every session; `immediate`
        kills the server, which recovers from its write-ahead log at the next start."""
        self.run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def running(self) -> bool:
        return subprocess.run([*self.as_owner, str(self.bin / "pg_ctl"), "-D", str(self.data), "status"],
                              capture_output=True).returncode == 0

    def fill_disk(self, leave_bytes: int) -> None:
        """Takes all but about `leave_bytes` of the data directory's file system (the
        server writes meanwhile, so what is free is measured again after a miss)."""
        with open(self.disk / "filler", "wb") as filler:
            for _ in range(20):
                stat = os.statvfs(self.disk)
                free = stat.f_bavail * stat.f_frsize - leave_bytes
                if free <= 0:
                    return
                try:
                    os.posix_fallocate(filler.fileno(), filler.seek(0, os.SEEK_END), free)
                    return
                except OSError as error:
                    if error.errno != errno.ENOSPC:
                        raise
            raise RuntimeError("could not fill the disk")

    def free_disk(self) -> None:
        (self.disk / "filler").unlink(missing_ok=True)

    def sql(self, query: str, database: str = "postgres") -> str:
        # The harness's own connections are bounded like the servers': a connection
        # that happens to land on a port pair a fault blackholes (its port reused) is
        # given up within seconds and made again on another port.
        bounded = "connect_timeout=10&tcp_user_timeout=10000&keepalives_idle=5&keepalives_interval=2"
        for attempt in range(3):
            try:
                return subprocess.run(
                    ["psql", f"{self.base}/{database}?{bounded}", "-v", "ON_ERROR_STOP=1", "-Atc", query],
                    check=True, capture_output=True, text=True, timeout=30,
                ).stdout
            except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as error:
                lost = isinstance(error, subprocess.TimeoutExpired) or "timeout" in (error.stderr or "")
                if attempt == 2 or not lost:
                    raise
        raise AssertionError("unreachable")

    def terminate_backends(self, database: str) -> int:
        """Ends every session connected to `database` (the servers'), mid-transaction
        or not; returns how many there were."""
        return int(self.sql(
            f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            f"WHERE datname = '{database}' AND pid <> pg_backend_pid()").strip() or 0)

    def close(self) -> None:
        try:
            self.stop("immediate")
        except subprocess.CalledProcessError:
            pass
        if self.disk:
            subprocess.run(["umount", "--lazy", str(self.disk)], check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


class ConnectionHog:
    """Another client, the role `hog`, that takes connection slots and keeps each
    session open and idle until released. Like the servers' role it may not use the
    slots PostgreSQL reserves for superusers, which the harness's own SQL keeps."""

    def __init__(self, database: PrivatePostgres) -> None:
        self.database = database
        self.sessions: list[subprocess.Popen] = []

    def take(self, count: int) -> int:
        """Opens `count` sessions at once; returns how many the server let in."""
        # Each psql waits on its open standard input: an idle session, which ends as
        # soon as its client does.
        opened = [
            subprocess.Popen(["psql", f"postgres://hog@127.0.0.1:{self.database.port}/postgres"],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(count)
        ]
        # A refused session exits at once; one let in waits.
        time.sleep(1.5)
        kept = [session for session in opened if session.poll() is None]
        self.sessions += kept
        return len(kept)

    def release(self) -> None:
        for session in self.sessions:
            session.kill()
            session.wait()
        self.sessions = []
        # Refused ones left nothing behind; the others' sessions end with their clients.
        deadline = time.monotonic() + 10
        while self.database.sessions_of("hog") and time.monotonic() < deadline:
            time.sleep(0.05)


class Tarpit:
    """A listener on loopback that accepts every connection and never answers: a slow
    public chat service or webhook endpoint. It holds each connection until the client
    gives up or the tarpit is closed."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1024)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/hook"
        self.held: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # closed
            with self.lock:
                self.held.append(connection)

    def accepted(self) -> int:
        """How many connections it has taken (and never answered)."""
        with self.lock:
            return len(self.held)

    def close(self) -> None:
        # Shut down first: that wakes the thread blocked in accept(), a close alone may not.
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            for connection in self.held:
                connection.close()
            self.held = []


class TcpProxy:
    """A TCP proxy on a free local port in front of `target_port`, with faults:
    `delay` (seconds added before each chunk is passed on), `reset()` (every open
    connection reset, and new ones while `refusing`), and `half_open()` (every open
    connection goes silent in both directions and stays open, as when the peer
    vanishes without a word; new connections pass again after `heal()`, the silent
    ones never do)."""

    def __init__(self, target_port: int) -> None:
        self.port = servers.free_port()
        self.target_port = target_port
        self.delay = 0.0
        self.refusing = False
        self.links: set[_Link] = set()
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(started,), daemon=True)
        self.thread.start()
        started.wait(10)

    def _serve(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._accept, "127.0.0.1", self.port))
        started.set()
        self.loop.run_forever()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            _reset(writer)
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            _reset(writer)
            return
        link = _Link(writer, upstream_writer)
        self.links.add(link)
        try:
            await asyncio.gather(self._pipe(link, reader, upstream_writer), self._pipe(link, upstream_reader, writer))
        finally:
            self.links.discard(link)

    async def _pipe(self, link: "_Link", reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                if self.delay:
                    await asyncio.sleep(self.delay)
                if link.silent:
                    continue  # swallowed: the other side never hears of it
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            # A silent link does not pass on the end of the connection either, but for
            # the server's side, which is told when the client gives up.
            if not link.silent or writer is link.upstream:
                link.close(writer)

    def _on_loop(self, action) -> None:
        done = threading.Event()

        def run() -> None:
            try:
                action()
            finally:
                done.set()

        self.loop.call_soon_threadsafe(run)
        done.wait(10)

    def reset(self) -> int:
        """Resets every open connection; returns how many."""
        count = len(self.links)

        def action() -> None:
            for link in list(self.links):
                link.reset()

        self._on_loop(action)
        return count

    def half_open(self) -> int:
        """Silences every open connection for good; returns how many."""
        count = len(self.links)

        def action() -> None:
            for link in self.links:
                link.silent = True

        self._on_loop(action)
        return count

    def heal(self) -> None:
        self.delay = 0.0
        self.refusing = False

    def close(self) -> None:
        def action() -> None:
            self.server.close()
            for link in list(self.links):
                link.reset()

        self._on_loop(action)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


class _Link:
    """One proxied connection: the client's side and the upstream side."""

    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream = upstream
        self.silent = False

    def close(self, writer: asyncio.StreamWriter) -> None:
        other = self.upstream if writer is self.client else self.client
        for side in (writer, other):
            if not side.is_closing():
                side.close()

    def reset(self) -> None:
        _reset(self.client)
        _reset(self.upstream)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Closes with a TCP reset rather than an orderly end."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


class Blackhole:
    """Drops in the kernel, both ways and for good, every packet of the TCP connections
    open to `port` at the moment `drop_open()` is called, as a NAT or firewall does once
    it has lost their entries: a half-open connection, where neither side hears a
    reset or an acknowledgement, and the sender's retransmissions go unanswered. New
    connections pass. Its rules are an nftables table of its own (`nft`, Debian's
    nftables; root), removed by `close()`; nothing else on the machine is touched."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.table = f"agentprocess_chaos_{secrets.token_hex(4)}"
        # Loopback traffic passes the output hook once each way.
        _nft(f"add table inet {self.table}\n"
             f"add chain inet {self.table} out {{ type filter hook output priority 0; policy accept; }}\n")

    def drop_open(self) -> int:
        """Blackholes every connection open to the port now; returns how many."""
        listed = subprocess.run(["ss", "-Htn", "state", "established", f"( dport = :{self.port} )"],
                                check=True, capture_output=True, text=True).stdout
        ports = sorted({int(match) for match in re.findall(r"127\.0\.0\.1:(\d+)\s+127\.0\.0\.1:\d+", listed)})
        rules = "".join(f"add rule inet {self.table} out tcp sport {port} tcp dport {self.port} drop\n"
                        f"add rule inet {self.table} out tcp sport {self.port} tcp dport {port} drop\n"
                        for port in ports)
        if rules:
            _nft(rules)
        return len(ports)

    def close(self) -> None:
        subprocess.run(["nft", "delete", "table", "inet", self.table], check=False, capture_output=True)


def _nft(commands: str) -> None:
    subprocess.run(["nft", "-f", "-"], input=commands, check=True, capture_output=True, text=True)


class IdleInTransaction:
    """A session of another client that opens a transaction, reads, and then sits idle
    in it: it holds back the oldest snapshot (`xmin`), so VACUUM can remove no row
    version that changed since."""

    def __init__(self, database: PrivatePostgres, name: str) -> None:
        self.database = database
        self.session = subprocess.Popen(["psql", "-X", "-q", f"{database.base}/{name}"], stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
        self.session.stdin.write("BEGIN ISOLATION LEVEL REPEATABLE READ;\nSELECT count(*) FROM runs;\n")
        self.session.stdin.flush()
        deadline = time.monotonic() + 10
        while not self.held_back():
            if time.monotonic() > deadline:
                raise RuntimeError("the session did not stay idle in its transaction")
            time.sleep(0.05)

    def held_back(self) -> int:
        """How many transactions the session's snapshot is behind (0 when none)."""
        found = self.database.sql(
            "SELECT coalesce(max(age(backend_xmin)), 0) FROM pg_stat_activity "
            "WHERE state = 'idle in transaction' AND usename = 'postgres'").strip()
        return int(found or 0)

    def release(self) -> None:
        self.session.stdin.close()
        self.session.wait(timeout=10)
