"""scripts/release, on the binaries the tests run (the dev build: a release build would
add 5 minutes to a warm test run, 12½ to a cold one): the tarball of the three
binaries, the image as an OCI archive that loads and runs, a CycloneDX SBOM per binary
that agrees with Cargo.lock, the Helm chart, and SHA-256 sums of them all; the archives
reproducible; the sums signed; a chart out of step with the workspace, a folder holding
other files, missing binaries or a missing signing key refused, each named, before any
work."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import subprocess
import tarfile
import tomllib
from datetime import datetime, timezone
from pathlib import Path

import pytest

from servers import BIN, REPO
from test_image import podman

PROGRAMS = ("agentprocess", "agentprocess-api", "agentprocess-scheduler")
VERSION = tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["version"]
TRIPLE = next(line.split(": ", 1)[1] for line in subprocess.run(["rustc", "-vV"], capture_output=True, text=True,
                                                                 check=True).stdout.splitlines()
              if line.startswith("host: "))
COMMITTED_AT = int(subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=REPO, capture_output=True, text=True,
                                  check=True).stdout)


def release(out: Path, image: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "scripts" / "release"), "--out", str(out), "--binaries", str(BIN),
                           "--image", image, *extra], capture_output=True, text=True, timeout=900,
                          env=os.environ | (env or {}))


class Keyring:
    """A GnuPG home of the test's own holding one fresh signing key, without a
    passphrase: a stand-in for the release key a real release signs with."""

    def __init__(self, home: Path) -> None:
        home.mkdir(mode=0o700)
        self.env = {"GNUPGHOME": str(home)}
        try:
            self.gpg("--passphrase", "", "--pinentry-mode", "loopback", "--quick-gen-key",
                     "agentprocess release test <release@example.com>", "ed25519", "sign", "never")
            listed = self.gpg("--with-colons", "--list-secret-keys").stdout
            self.fingerprint = next(line.split(":")[9] for line in listed.splitlines() if line.startswith("fpr:"))
        except BaseException:
            self.close()
            raise

    def gpg(self, *arguments: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["gpg", "--batch", *arguments], capture_output=True, text=True, timeout=60,
                              check=check, env=os.environ | self.env)

    def close(self) -> None:
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=os.environ | self.env, check=False)


@pytest.fixture(scope="module")
def keyring(tmp_path_factory):
    made = Keyring(tmp_path_factory.mktemp("gnupg") / "home")
    yield made
    made.close()


@pytest.fixture(scope="module")
def released(tmp_path_factory, keyring):
    image = f"localhost/agentprocess-release-test:{secrets.token_hex(4)}"
    out = tmp_path_factory.mktemp("release") / "dist"
    made = release(out, image, "--sign", keyring.fingerprint, env=keyring.env)
    assert made.returncode == 0, made.stdout + made.stderr
    print(made.stdout)
    yield out, image
    podman("rmi", "--force", image, check=False)


def names() -> set[str]:
    return {
        f"agentprocess-{VERSION}-{TRIPLE}.tar.gz", f"agentprocess-{VERSION}-image.oci.tar",
        *(f"{program}-{VERSION}.cdx.json" for program in PROGRAMS), f"agentprocess-{VERSION}.tgz",
    }


def test_every_file_is_summed_and_every_sum_holds(released):
    out, _ = released
    assert {path.name for path in out.iterdir()} == names() | {"SHA256SUMS", "SHA256SUMS.asc"}
    sums = dict(reversed(line.split("  ", 1)) for line in (out / "SHA256SUMS").read_text().splitlines())
    assert set(sums) == names()
    for name, digest in sums.items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest, name
    assert subprocess.run(["sha256sum", "--check", "--strict", "--quiet", "SHA256SUMS"], cwd=out).returncode == 0


def test_the_sums_are_signed_and_a_changed_sum_fails_the_signature(released, keyring, tmp_path):
    out, _ = released
    assert (out / "SHA256SUMS.asc").read_text().startswith("-----BEGIN PGP SIGNATURE-----")
    verified = keyring.gpg("--status-fd", "1", "--verify", str(out / "SHA256SUMS.asc"), str(out / "SHA256SUMS"))
    assert f"VALIDSIG {keyring.fingerprint}" in verified.stdout, verified.stdout
    forged = tmp_path / "SHA256SUMS"
    sums = (out / "SHA256SUMS").read_text()
    forged.write_text(sums.replace(sums[0], "0" if sums[0] != "0" else "1", 1))
    refused = keyring.gpg("--status-fd", "1", "--verify", str(out / "SHA256SUMS.asc"), str(forged), check=False)
    assert refused.returncode != 0 and "BADSIG" in refused.stdout, refused.stdout


def test_the_tarball_holds_the_three_binaries_stripped_and_they_run(released, tmp_path):
    out, _ = released
    folder = f"agentprocess-{VERSION}-{TRIPLE}"
    with tarfile.open(out / f"{folder}.tar.gz") as archive:
        members = {member.name: member for member in archive.getmembers()}
        assert set(members) == {folder, f"{folder}/bin", f"{folder}/README.md",
                                *(f"{folder}/bin/{program}" for program in PROGRAMS)}
        for member in members.values():
            assert (member.uid, member.gid, member.uname, member.gname) == (0, 0, "", ""), member.name
            assert member.mtime == COMMITTED_AT, member.name
        for program in PROGRAMS:
            assert members[f"{folder}/bin/{program}"].mode == 0o755
        archive.extractall(tmp_path, filter="tar")
    for program in PROGRAMS:
        binary = tmp_path / folder / "bin" / program
        sections = subprocess.run(["readelf", "-S", "-W", str(binary)], capture_output=True, text=True,
                                  check=True).stdout
        assert ".symtab" not in sections and ".debug_info" not in sections, f"{program} is stripped"
        ran = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30)
        assert ran.returncode == 0 and VERSION in ran.stdout, (program, ran.stdout, ran.stderr)


def test_the_image_archive_is_oci_and_loads_as_an_image_that_runs_as_65532(released):
    out, image = released
    archive = out / f"agentprocess-{VERSION}-image.oci.tar"
    with tarfile.open(archive) as oci:
        assert json.loads(oci.extractfile("oci-layout").read())["imageLayoutVersion"] == "1.0.0"
        index = json.loads(oci.extractfile("index.json").read())
        assert [manifest["mediaType"] for manifest in index["manifests"]] == [
            "application/vnd.oci.image.manifest.v1+json"]
    podman("rmi", "--force", image, check=False)
    loaded = podman("load", "--quiet", "-i", str(archive)).stdout
    assert image in loaded, loaded
    config = json.loads(podman("image", "inspect", image).stdout)[0]["Config"]
    assert config["User"] == "65532:65532"
    assert config["Labels"]["org.opencontainers.image.version"] == VERSION
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    assert config["Labels"]["org.opencontainers.image.revision"] in (head, f"{head}-dirty")
    ran = podman("run", "--rm", "--network", "none", "--read-only", "--entrypoint", "/usr/local/bin/agentprocess",
                 image, "--version")
    assert VERSION in ran.stdout, ran.stdout


def locked() -> set[tuple[str, str]]:
    lock = tomllib.loads((REPO / "Cargo.lock").read_text())
    return {(package["name"], package["version"]) for package in lock["package"]}


def built(*packages: str) -> set[tuple[str, str]]:
    """(name, version) of every crate cargo builds for `packages` built together
    (normal and build dependencies)."""
    command = ["cargo", "tree", "--locked", "--edges", "normal,build", "--target", TRIPLE, "--prefix", "none",
               "--format", "{p}"]
    for package in packages:
        command += ["--package", package]
    lines = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True).stdout.splitlines()
    return {(line.split()[0], line.split()[1].removeprefix("v")) for line in lines if line.strip()}


@pytest.mark.parametrize("program", PROGRAMS)
def test_each_sbom_lists_the_binarys_dependencies_at_their_locked_versions(released, program):
    out, _ = released
    bom = json.loads((out / f"{program}-{VERSION}.cdx.json").read_text())
    assert (bom["bomFormat"], bom["specVersion"]) == ("CycloneDX", "1.5")
    assert (bom["metadata"]["component"]["name"], bom["metadata"]["component"]["version"]) == (program, VERSION)
    components = {(component["name"], component["version"]) for component in bom["components"]}
    external = {component for component in components if not component[0].startswith("agentprocess")}
    assert external <= locked(), external - locked()
    for component in bom["components"]:
        if not component["name"].startswith("agentprocess"):
            assert component["purl"] == f"pkg:cargo/{component['name']}@{component['version']}", component
    # Every crate compiled into the binary, and none that the release build does not
    # compile: optional dependencies no feature turns on (cargo metadata lists them) and
    # the tests' own are left out.
    alone, together = built(program) - {(program, VERSION)}, built(*PROGRAMS)
    assert alone <= components, sorted(alone - components)
    assert components <= together, sorted(components - together)
    crates = {name for name, _ in components}
    assert {"tokio", "serde_json", "sqlx-core", "agentprocess-engine"} <= crates
    assert not crates & {"sqlx-mysql", "proptest", "agentprocess-testkit"}


def test_the_chart_is_packaged_at_the_workspace_version(released):
    out, _ = released
    with tarfile.open(out / f"agentprocess-{VERSION}.tgz") as chart:
        meta = chart.extractfile("agentprocess/Chart.yaml").read().decode()
        assert f"version: {VERSION}" in meta and f"appVersion: {VERSION}" in meta.replace('"', "")
        assert "agentprocess/values.schema.json" in chart.getnames()


def test_the_tarball_and_the_sboms_are_reproducible(released, tmp_path):
    out, image = released
    again = release(tmp_path / "again", image)
    assert again.returncode == 0, again.stdout + again.stderr
    for name in (f"agentprocess-{VERSION}-{TRIPLE}.tar.gz", *(f"{p}-{VERSION}.cdx.json" for p in PROGRAMS)):
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes(), name
    # An SBOM is dated at the commit, and has no serial number to differ by.
    bom = json.loads((out / f"agentprocess-{VERSION}.cdx.json").read_text())
    assert "serialNumber" not in bom
    assert bom["metadata"]["timestamp"].startswith(
        datetime.fromtimestamp(COMMITTED_AT, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"))


def test_every_problem_is_named_at_once_before_any_work(tmp_path):
    tree = tmp_path / "tree"
    for path in ("scripts/release", "Cargo.toml", "helm/agentprocess/Chart.yaml"):
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / path, tree / path)
    chart = tree / "helm/agentprocess/Chart.yaml"
    chart.write_text(chart.read_text().replace(f"appVersion: \"{VERSION}\"", "appVersion: \"9.9.9\""))
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("kept")
    # Paths are the caller's, here relative to tmp_path.
    gnupg = tmp_path / "gnupg"
    gnupg.mkdir(mode=0o700)
    refused = subprocess.run([str(tree / "scripts/release"), "--out", "out", "--binaries", "bins", "--sign",
                              "release@example.com"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                             env=os.environ | {"AGENTPROCESS_HELM": str(tmp_path / "no-helm"), "GNUPGHOME": str(gnupg)})
    assert refused.returncode == 1
    # Every problem at once.
    assert refused.stderr.splitlines() == [
        f"scripts/release: helm/agentprocess/Chart.yaml: appVersion is 9.9.9, the workspace is {VERSION}",
        f"scripts/release: no helm at {tmp_path / 'no-helm'} (AGENTPROCESS_HELM)",
        f"scripts/release: {out} holds notes.txt, which this release does not make: give an empty folder (--out)",
        f"scripts/release: cannot sign with release@example.com from the GnuPG keyring {gnupg} (--sign): no such "
        "secret key, or it is expired, revoked, not for signing or locked",
        *(f"scripts/release: no {tmp_path / 'bins' / program} (--binaries)" for program in PROGRAMS),
    ], refused.stderr
    assert [path.name for path in out.iterdir()] == ["notes.txt"], "nothing was made or removed"
