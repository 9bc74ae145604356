"""The container image (deploy/Dockerfile's runtime stage on binaries built here, by
scripts/image) run with podman as the Helm chart runs it: as user 65532, with a
read-only root filesystem and a writable /tmp. `agentprocess dev` answers /healthz;
`agentprocess-api migrate`, then `serve`, against this machine's PostgreSQL answers
/readyz. scripts/test builds the image first and prints its size; run alone, this
builds it."""

from __future__ import annotations

import base64
import io
import os
import secrets
import subprocess
import tarfile
import urllib.request
import uuid

import pytest

import servers
from servers import BIN, REPO

IMAGE = "localhost/agentprocess:test"


def podman(*arguments: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    environment = os.environ | {"CONTAINERS_CONF": conf()}
    return subprocess.run(["podman", *arguments], capture_output=True, text=True, timeout=timeout, check=check,
                          env=environment)


def conf() -> str:
    return subprocess.run([str(REPO / "scripts" / "containers.conf.sh")], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture(scope="module")
def image():
    if podman("image", "exists", IMAGE, check=False).returncode != 0:
        built = subprocess.run([str(REPO / "scripts" / "image"), "--binaries", str(BIN), "--tag", IMAGE],
                               capture_output=True, text=True, timeout=600)
        assert built.returncode == 0, built.stdout + built.stderr
    return IMAGE


class Container:
    """One detached container of the image, as the chart runs it."""

    def __init__(self, image: str, *arguments: str, entrypoint: str | None = None):
        self.name = f"agentprocess-e2e-{uuid.uuid4().hex[:12]}"
        chosen = ["--entrypoint", entrypoint] if entrypoint else []
        podman("run", "-d", "--name", self.name, "--network", "host", "--read-only",
               "--tmpfs", "/tmp:rw,mode=1777", *chosen, image, *arguments)

    def uid(self) -> int:
        pid = podman("inspect", "--format", "{{.State.Pid}}", self.name).stdout.strip()
        status = open(f"/proc/{pid}/status").read()
        return int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])

    def logs(self) -> str:
        found = podman("logs", self.name, check=False)
        return found.stdout + found.stderr

    def close(self) -> None:
        podman("rm", "-f", "-t", "2", self.name, check=False)


def answers(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except OSError:
        return 0


def test_the_image_runs_as_65532_with_the_three_binaries_and_stays_small(image):
    user, entrypoint = podman("image", "inspect", "--format", "{{.Config.User}} {{json .Config.Entrypoint}}",
                              image).stdout.split(" ", 1)
    assert user == "65532:65532" and entrypoint.strip() == '["agentprocess-api"]'
    for binary in ("agentprocess", "agentprocess-scheduler"):
        ran = podman("run", "--rm", "--read-only", "--entrypoint", binary, image, "--version")
        assert ran.stdout.startswith(binary), ran.stdout
    size = int(podman("image", "inspect", "--format", "{{.Size}}", image).stdout)
    # The base (glibc, CA certificates, time zones) is about 16 MB; the rest is the three
    # stripped binaries, about 60 MB each from the dev profile used here.
    assert size < 240 * 1024 * 1024, size


def test_the_image_lists_its_debian_packages_where_scanners_look_and_keeps_their_notices(image):
    # An image scanner finds the OS in /etc/os-release and, in an image without dpkg,
    # the packages in /var/lib/dpkg/status.d/ (distroless's layout).
    name = f"agentprocess-e2e-{uuid.uuid4().hex[:12]}"
    podman("create", "--name", name, image)
    try:
        def read(path: str) -> dict[str, tarfile.TarInfo | bytes]:
            """The files below `path` (their bytes) and the links (their TarInfo)."""
            archive = subprocess.run(["podman", "cp", f"{name}:{path}", "-"], capture_output=True, timeout=60,
                                     check=True, env=os.environ | {"CONTAINERS_CONF": conf()}).stdout
            with tarfile.open(fileobj=io.BytesIO(archive)) as files:
                return {member.name: files.extractfile(member).read() if member.isfile() else member
                        for member in files.getmembers() if member.isfile() or member.issym()}

        architecture = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                                      check=True).stdout.strip()
        os_release = read("/usr/lib/os-release")
        assert b"VERSION_CODENAME=bookworm" in os_release["os-release"]
        listed = read("/var/lib/dpkg/status.d")
        packages = {path.rsplit("/", 1)[-1]: text.decode() for path, text in listed.items()}
        assert set(packages) == {"base-files", "ca-certificates", "gcc-12-base", "libc6", "libgcc-s1", "netbase",
                                 "tzdata"}
        for package, control in packages.items():
            fields = dict(line.split(": ", 1) for line in control.splitlines() if ": " in line)
            assert fields["Package"] == package and fields["Status"] == "install ok installed", control
            assert fields["Version"] and fields["Architecture"] in (architecture, "all"), control
        # Only each package's notice is kept, in its own folder or one its folder links
        # to (libgcc-s1 → gcc-12-base), and no link is left dangling.
        docs = read("/usr/share/doc")
        links = {path: entry.linkname for path, entry in docs.items() if isinstance(entry, tarfile.TarInfo)}
        assert links == {"doc/libgcc-s1": "gcc-12-base"}, links
        assert {path for path in docs if path not in links} == {f"doc/{package}/copyright" for package in packages
                                                                  if f"doc/{package}" not in links}, sorted(docs)
        assert all(docs[path] for path in docs if path not in links), "no notice is empty"
    finally:
        podman("rm", name, check=False)


def test_agentprocess_dev_in_the_image_answers_healthz(image):
    port = servers.free_port()
    container = Container(image, "dev", "--listen", f"127.0.0.1:{port}", "--data-dir", "/tmp/data",
                          entrypoint="agentprocess")
    try:
        servers.eventually(lambda: answers(f"http://127.0.0.1:{port}/healthz") == 200, what="/healthz",
                           timeout=60)
        assert container.uid() == 65532
    except BaseException:
        print(container.logs())
        raise
    finally:
        container.close()


def test_migrate_then_serve_against_postgres_answers_readyz_read_only(image):
    database = f"e2e_{secrets.token_hex(6)}"
    servers.psql(f"CREATE DATABASE {database}")
    url = f"{servers.PG}/{database}"
    port = servers.free_port()
    container = None
    try:
        migrated = podman("run", "--rm", "--network", "host", "--read-only", image, "migrate",
                          "--database-url", url)
        assert "migrations applied" in migrated.stdout + migrated.stderr
        container = Container(
            image, "serve", "--database-url", url, "--listen", f"127.0.0.1:{port}",
            "--public-url", f"http://127.0.0.1:{port}", "--url-secret",
            base64.b64encode(secrets.token_bytes(32)).decode(), "--secret-key", servers.SECRET_KEY,
            "--blob-dir", "/tmp/files")
        servers.eventually(lambda: answers(f"http://127.0.0.1:{port}/readyz") == 200, what="/readyz", timeout=60)
        assert container.uid() == 65532
        readonly = podman("inspect", "--format", "{{.HostConfig.ReadonlyRootfs}}", container.name).stdout.strip()
        assert readonly == "true"
    except BaseException:
        if container:
            print(container.logs())
        raise
    finally:
        if container:
            container.close()
        servers.psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
