"""The Helm chart (helm/agentprocess): `helm lint`, `helm template` with the chart's
test values (helm/agentprocess/ci/*.yaml), every rendered manifest validated offline
against the Kubernetes OpenAPI schemas that kubernetes-validate bundles (strict: an
unknown field fails), and the properties an operator relies on checked in the render.

kubernetes-validate knows only Kubernetes' own kinds. The one custom resource the chart
makes, the Prometheus Operator's ServiceMonitor, is validated against SERVICE_MONITOR
below instead: the part of that CRD's schema the chart uses, with unknown fields refused.
Any other kind without a schema fails the test.

helm comes from scripts/install-test-deps (or $AGENTPROCESS_HELM). No cluster is used:
`helm template` renders offline, so `lookup` finds nothing and the keys (the URL key, the
sealing key) are generated. The tests of how an upgrade keeps them render against
FakeCluster instead: a stand-in for the Kubernetes API in this process that answers the
few calls `helm template --dry-run=server` makes, with the release's Secret in it.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import subprocess
import threading
from pathlib import Path
from urllib.parse import urlparse

import jsonschema
import kubernetes_validate.utils as kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "agentprocess"
CI = CHART / "ci"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
HELM = Path(os.environ.get("AGENTPROCESS_HELM", CACHE / "agentprocess" / "helm" / "helm"))

# The newest Kubernetes version whose schemas kubernetes-validate 1.37.0 bundles; the
# chart is rendered for the same version (helm template --kube-version).
KUBERNETES_VERSION = "1.37.0"
NAMESPACE = "agentprocess"
RELEASE = "ap"
SERVER_USER = 65532

DURATION = "^(0|(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"  # Prometheus' own
SERVICE_MONITOR = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": {
            "type": "object",
            "required": ["name"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63},
                "namespace": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "spec": {
            "type": "object",
            "required": ["selector", "endpoints"],
            "additionalProperties": False,
            "properties": {
                "selector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "matchExpressions": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["key", "operator"],
                                "additionalProperties": False,
                                "properties": {
                                    "key": {"type": "string"},
                                    "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                                    "values": {"type": "array", "items": {"type": "string"}},
                                },
                            },
                        },
                    },
                },
                "namespaceSelector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "any": {"type": "boolean"},
                        "matchNames": {"type": "array", "items": {"type": "string"}},
                    },
                },
                "jobLabel": {"type": "string"},
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string", "pattern": "^/"},
                            "scheme": {"enum": ["http", "https"]},
                            "interval": {"type": "string", "pattern": DURATION},
                            "scrapeTimeout": {"type": "string", "pattern": DURATION},
                        },
                    },
                },
            },
        },
    },
}

# Custom resources validated by the schemas above rather than by kubernetes-validate.
CUSTOM_SCHEMAS = {("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR}


# --- helm ------------------------------------------------------------------------------


def helm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    if not HELM.is_file() or not os.access(HELM, os.X_OK):
        pytest.fail(
            f"helm is not at {HELM}: run scripts/install-test-deps (or set AGENTPROCESS_HELM)",
            pytrace=False,
        )
    return subprocess.run(
        [str(HELM), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env=None if env is None else {**os.environ, **env},
    )


def template_args(values: list[Path | str], sets: list[str]) -> list[str]:
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE, "--kube-version", KUBERNETES_VERSION]
    for path in values:
        args += ["--values", str(path)]
    for item in sets:
        args += ["--set", item]
    return args


def render(
    *values: Path | str, sets: list[str] | None = None, extra: dict | None = None, tmp_path=None
) -> list[dict]:
    """The manifests `helm template` renders, hooks included."""
    files = list(values)
    if extra is not None:
        assert tmp_path is not None
        path = tmp_path / f"extra-{len(list(tmp_path.iterdir()))}.yaml"
        path.write_text(yaml.safe_dump(extra))
        files.append(path)
    done = helm(*template_args(files, sets or []))
    assert done.returncode == 0, f"helm template failed:\n{done.stderr}"
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def refused(*values: Path | str, extra: dict, tmp_path) -> str:
    """helm template's error for values it must refuse."""
    path = tmp_path / "refused.yaml"
    path.write_text(yaml.safe_dump(extra))
    done = helm(*template_args([*values, path], []))
    assert done.returncode != 0, f"helm template accepted {extra}:\n{done.stdout[:2000]}"
    return done.stderr


DEFAULT = CI / "default-values.yaml"
PRODUCTION = CI / "production-values.yaml"
SETS = {"default": [DEFAULT], "production": [PRODUCTION]}


@pytest.fixture(scope="module", params=sorted(SETS))
def rendered(request) -> tuple[str, list[dict]]:
    return request.param, render(*SETS[request.param])


# --- helpers over a render ---------------------------------------------------------------


def of_kind(docs: list[dict], kind: str) -> list[dict]:
    return [doc for doc in docs if doc["kind"] == kind]


def named(docs: list[dict], kind: str, suffix: str) -> dict:
    found = [doc for doc in of_kind(docs, kind) if doc["metadata"]["name"].endswith(suffix)]
    assert len(found) == 1, f"expected one {kind} named …{suffix}, found {[d['metadata']['name'] for d in found]}"
    return found[0]


def pod_specs(docs: list[dict]) -> list[tuple[str, dict]]:
    return [
        (f"{doc['kind']}/{doc['metadata']['name']}", doc["spec"]["template"]["spec"])
        for doc in docs
        if doc["kind"] in ("Deployment", "Job", "StatefulSet", "DaemonSet")
    ]


def env_of(container: dict) -> dict[str, dict]:
    return {item["name"]: item for item in container.get("env", [])}


def is_hook(doc: dict) -> bool:
    return "helm.sh/hook" in doc["metadata"].get("annotations", {})


# --- the validator itself ----------------------------------------------------------------


def test_validator_bundles_the_kubernetes_version_rendered_for():
    assert kubernetes_validate.latest_version() == KUBERNETES_VERSION


def test_validator_is_strict():
    """A negative control: an unknown field and a wrong type both fail."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "x", "image": "x", "readinessProbe": {"httpGet": {"port": 1}}}]},
            },
        },
    }
    kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["pathh"] = "/readyz"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    monitor = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "m"}}
    monitor["spec"] = {"selector": {}, "endpoints": [{"port": "metrics", "intervall": "30s"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(monitor, SERVICE_MONITOR)


# --- lint and validation -----------------------------------------------------------------


@pytest.mark.parametrize("values", [None, *sorted(SETS)])
def test_lint_strict(values):
    args = ["lint", "--strict", str(CHART), "--kube-version", KUBERNETES_VERSION]
    if values:
        for path in SETS[values]:
            args += ["--values", str(path)]
    done = helm(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 chart(s) failed" in done.stdout
    assert "[WARNING]" not in done.stdout and "[ERROR]" not in done.stdout


def test_every_manifest_validates(rendered):
    _, docs = rendered
    assert docs
    problems = []
    for doc in docs:
        where = f"{doc['kind']}/{doc['metadata']['name']}"
        custom = CUSTOM_SCHEMAS.get((doc["apiVersion"], doc["kind"]))
        try:
            if custom is not None:
                jsonschema.Draft7Validator(custom).validate(doc)
            else:
                kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except jsonschema.ValidationError as error:  # kubernetes-validate's is a subclass
            path = ".".join(str(part) for part in error.path)
            problems.append(f"{where}: {path}: {error.message}")
        except kubernetes_validate.SchemaNotFoundError as error:
            problems.append(f"{where}: {error.message}")
    assert not problems, "\n".join(problems)


def test_names_fit_kubernetes(rendered):
    _, docs = rendered
    for doc in docs:
        name = doc["metadata"]["name"]
        assert len(name) <= 63 and name == name.lower(), name
    keys = [(doc["kind"], doc["metadata"]["name"]) for doc in docs]
    assert len(keys) == len(set(keys)), "two resources share a kind and a name"


def test_the_expected_resources(rendered):
    which, docs = rendered
    kinds = sorted({doc["kind"] for doc in docs})
    expected = {
        "ConfigMap",
        "Deployment",
        "HorizontalPodAutoscaler",
        "Job",
        "PodDisruptionBudget",
        "Service",
        "ServiceAccount",
    }
    if which == "production":
        expected |= {"Ingress", "NetworkPolicy", "ServiceMonitor"}
    else:
        expected |= {"Secret"}
    assert set(kinds) == expected
    prefix = "agentprocess" if which == "production" else f"{RELEASE}-agentprocess"
    assert {doc["metadata"]["name"] for doc in of_kind(docs, "Deployment")} == {f"{prefix}-api", f"{prefix}-scheduler"}
    api = named(docs, "Deployment", "-api")["spec"]["template"]["spec"]["containers"][0]
    scheduler = named(docs, "Deployment", "-scheduler")["spec"]["template"]["spec"]["containers"][0]
    assert api["command"] == ["agentprocess-api"] and api["args"] == ["serve"]
    assert scheduler["command"] == ["agentprocess-scheduler"] and scheduler["args"] == ["serve"]


# --- pods ----------------------------------------------------------------------------------


def test_every_pod_is_hardened(rendered):
    _, docs = rendered
    specs = pod_specs(docs)
    assert len(specs) == 3  # the API, the scheduler, the migrations
    for where, spec in specs:
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True, where
        assert pod["runAsUser"] == SERVER_USER, where
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, where
        assert spec["automountServiceAccountToken"] is False, where
        volumes = {volume["name"]: volume for volume in spec["volumes"]}
        assert "emptyDir" in volumes["tmp"], where
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["runAsNonRoot"] is True, where
            assert context["runAsUser"] == SERVER_USER, where
            assert context["readOnlyRootFilesystem"] is True, where
            assert context["allowPrivilegeEscalation"] is False, where
            assert context["capabilities"]["drop"] == ["ALL"], where
            assert context["seccompProfile"] == {"type": "RuntimeDefault"}, where
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(container["resources"][bound]), f"{where}: resources.{bound}"
            mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
            assert mounts["/tmp"] == "tmp", where


def test_servers_have_probes_on_their_ports(rendered):
    _, docs = rendered
    for suffix, port in (("-api", 8080), ("-scheduler", 8081)):
        spec = named(docs, "Deployment", suffix)["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        ports = {item["name"]: item["containerPort"] for item in container["ports"]}
        assert ports["http"] == port
        for probe, path in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            get = container[probe]["httpGet"]
            assert get["path"] == path, f"{suffix} {probe}"
            assert get["port"] == "http", f"{suffix} {probe}"


def test_shutdown_fits_in_the_termination_grace(rendered):
    _, docs = rendered
    for suffix in ("-api", "-scheduler"):
        config = named(docs, "ConfigMap", suffix)["data"]
        grace = float(config["AGENTPROCESS_SHUTDOWN_GRACE_SECONDS"])
        delay = float(config.get("AGENTPROCESS_SHUTDOWN_DELAY_SECONDS", "0"))
        assert delay >= 5, "endpoints need time to drop a stopping pod"
        spec = named(docs, "Deployment", suffix)["spec"]["template"]["spec"]
        assert spec["terminationGracePeriodSeconds"] > grace + delay


def test_default_shutdown_and_grace():
    docs = render(DEFAULT)
    config = named(docs, "ConfigMap", "-api")["data"]
    assert config["AGENTPROCESS_SHUTDOWN_GRACE_SECONDS"] == "25"
    assert config["AGENTPROCESS_SHUTDOWN_DELAY_SECONDS"] == "5"
    assert named(docs, "Deployment", "-api")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 40


def test_pods_restart_when_their_settings_change():
    # Both keys fixed, so renders compare.
    keys = [f"urlSecret={base64.b64encode(b'k' * 32).decode()}", f"secretKey={base64.b64encode(b's' * 32).decode()}"]

    def annotations(sets, suffix):
        docs = render(DEFAULT, sets=[*keys, *sets])
        return named(docs, "Deployment", suffix)["spec"]["template"]["metadata"]["annotations"]

    for suffix, setting in (("-api", "api.leaseSeconds=900"), ("-scheduler", "scheduler.timers.batch=64")):
        base = annotations([], suffix)
        assert base == annotations([], suffix), "the same values must give the same checksums"
        config = annotations([setting], suffix)
        assert config["checksum/config"] != base["checksum/config"]
        assert config["checksum/secret"] == base["checksum/secret"]
        secret = annotations(["database.url=postgres://other@db/agentprocess"], suffix)
        assert secret["checksum/secret"] != base["checksum/secret"]
        assert secret["checksum/config"] == base["checksum/config"]
    # The sign-in settings: the sealing key and the codes are in the Secret, the rest in
    # the API's ConfigMap.
    base = annotations([], "-api")
    for setting in (f"secretKey={base64.b64encode(b't' * 32).decode()}", "signup.codes={spring-2026}"):
        changed = annotations([setting], "-api")
        assert changed["checksum/secret"] != base["checksum/secret"], setting
        assert changed["checksum/config"] == base["checksum/config"], setting
    for setting in (
        "signup.policy=open",
        "sessions.idleSeconds=3600",
        "sessions.absoluteSeconds=7200",
        "oidc.timeoutSeconds=5",
    ):
        changed = annotations([setting], "-api")
        assert changed["checksum/config"] != base["checksum/config"], setting
        assert changed["checksum/secret"] == base["checksum/secret"], setting


def test_generated_url_secret_is_the_one_checksummed():
    """Without urlSecret the key is generated once per render: the Secret holds it and the
    pods' checksum is of that same Secret (so the first upgrade does not restart pods)."""
    done = helm(*template_args([DEFAULT], []))
    assert done.returncode == 0, done.stderr
    docs = [doc for doc in yaml.safe_load_all(done.stdout) if doc]
    secret = named(docs, "Secret", RELEASE + "-agentprocess")
    keys = {}
    for name in ("AGENTPROCESS_URL_SECRET", "AGENTPROCESS_SECRET_KEY"):
        keys[name] = base64.b64decode(base64.b64decode(secret["data"][name]), validate=True)
        assert len(keys[name]) >= 32, name
    assert keys["AGENTPROCESS_URL_SECRET"] != keys["AGENTPROCESS_SECRET_KEY"], "two keys, not one"
    # `include` hands the checksum the template's own output: the manifest between two
    # newlines, without the "# Source" line helm adds when printing.
    body = done.stdout.split("# Source: agentprocess/templates/secret.yaml\n", 1)[1].split("\n---\n", 1)[0]
    digest = hashlib.sha256(("\n" + body.rstrip("\n") + "\n").encode()).hexdigest()
    checksums = {
        named(docs, "Deployment", suffix)["spec"]["template"]["metadata"]["annotations"]["checksum/secret"]
        for suffix in ("-api", "-scheduler")
    }
    assert checksums == {digest}


class FakeCluster:
    """Just enough of the Kubernetes API for `helm template --dry-run=server`: the server
    version, discovery of the kinds the chart renders, and GET of one object each. It
    holds only the release's Secret (with the ownership metadata helm gives it, so helm
    sees a resource of this release); everything else is not found."""

    KINDS = {  # group version: {kind: resource}
        "v1": {
            "Secret": "secrets",
            "ConfigMap": "configmaps",
            "Service": "services",
            "ServiceAccount": "serviceaccounts",
        },
        "apps/v1": {"Deployment": "deployments"},
        "batch/v1": {"Job": "jobs"},
        "policy/v1": {"PodDisruptionBudget": "poddisruptionbudgets"},
        "autoscaling/v2": {"HorizontalPodAutoscaler": "horizontalpodautoscalers"},
        "networking.k8s.io/v1": {"Ingress": "ingresses", "NetworkPolicy": "networkpolicies"},
    }

    def __init__(self, tmp_path: Path, secret_data: dict[str, str]):
        self.secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": f"{RELEASE}-agentprocess",
                "namespace": NAMESPACE,
                "labels": {"app.kubernetes.io/managed-by": "Helm"},
                "annotations": {"meta.helm.sh/release-name": RELEASE, "meta.helm.sh/release-namespace": NAMESPACE},
            },
            "type": "Opaque",
            "data": secret_data,
        }
        self.reads = []
        cluster = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                code, body = cluster.answer(urlparse(self.path).path)
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.kubeconfig = tmp_path / "kubeconfig"
        server = f"http://127.0.0.1:{self.server.server_port}"
        context = {"cluster": "fake", "user": "fake", "namespace": NAMESPACE}
        self.kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "fake", "cluster": {"server": server}}],
                    "users": [{"name": "fake", "user": {"token": "fake"}}],
                    "contexts": [{"name": "fake", "context": context}],
                    "current-context": "fake",
                }
            )
        )

    def answer(self, path: str) -> tuple[int, dict]:
        major, minor, _ = KUBERNETES_VERSION.split(".")
        if path == "/version":
            return 200, {"major": major, "minor": minor, "gitVersion": f"v{KUBERNETES_VERSION}"}
        if path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if path == "/apis":
            groups = []
            for group_version in self.KINDS:
                if "/" in group_version:
                    group, version = group_version.split("/")
                    entry = {"groupVersion": group_version, "version": version}
                    groups.append({"name": group, "versions": [entry], "preferredVersion": entry})
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        group_version = path.removeprefix("/api/").removeprefix("/apis/")
        if group_version in self.KINDS:
            resources = [
                {"name": name, "singularName": kind.lower(), "namespaced": True, "kind": kind, "verbs": ["get", "list"]}
                for kind, name in self.KINDS[group_version].items()
            ]
            listing = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version}
            return 200, {**listing, "resources": resources}
        self.reads.append(path)
        if path == f"/api/v1/namespaces/{NAMESPACE}/secrets/{self.secret['metadata']['name']}":
            return 200, self.secret
        return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}

    def render(self) -> list[dict]:
        """The manifests, rendered with `lookup` answered from here."""
        args = [*template_args([DEFAULT], []), "--dry-run=server", "--disable-openapi-validation"]
        done = helm(*args, env={"KUBECONFIG": str(self.kubeconfig)})
        assert done.returncode == 0, f"helm template against the fake cluster failed:\n{done.stderr}"
        return [doc for doc in yaml.safe_load_all(done.stdout) if doc]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_an_upgrade_keeps_the_generated_keys(tmp_path):
    """The first install generates both keys; an upgrade finds them in the release's Secret
    (lookup) and renders the very same Secret, so the checksum is unchanged and no pod
    restarts."""
    first = render(DEFAULT)
    installed = named(first, "Secret", RELEASE + "-agentprocess")
    cluster = FakeCluster(tmp_path, installed["data"])
    try:
        docs = cluster.render()
    finally:
        cluster.close()
    assert f"/api/v1/namespaces/{NAMESPACE}/secrets/{RELEASE}-agentprocess" in cluster.reads, "helm never looked"
    upgraded = named(docs, "Secret", RELEASE + "-agentprocess")
    assert upgraded["data"] == installed["data"]
    key = base64.b64decode(base64.b64decode(upgraded["data"]["AGENTPROCESS_SECRET_KEY"]), validate=True)
    assert len(key) >= 32
    for suffix in ("-api", "-scheduler"):
        before = named(first, "Deployment", suffix)["spec"]["template"]["metadata"]["annotations"]
        after = named(docs, "Deployment", suffix)["spec"]["template"]["metadata"]["annotations"]
        assert after["checksum/secret"] == before["checksum/secret"], suffix


def test_an_upgrade_from_before_the_sealing_key_adds_one(tmp_path):
    """A release whose Secret predates AGENTPROCESS_SECRET_KEY keeps its URL key and gets a
    sealing key of its own (never the URL key)."""
    url_secret = base64.b64encode(b"an older release's url key, 40 b").decode()
    data = {
        "AGENTPROCESS_DATABASE_URL": base64.b64encode(b"postgres://agentprocess:change-me@db/agentprocess").decode(),
        "AGENTPROCESS_URL_SECRET": base64.b64encode(url_secret.encode()).decode(),
    }
    cluster = FakeCluster(tmp_path, data)
    try:
        docs = cluster.render()
    finally:
        cluster.close()
    held = named(docs, "Secret", RELEASE + "-agentprocess")["data"]
    assert base64.b64decode(held["AGENTPROCESS_URL_SECRET"]).decode() == url_secret
    key = base64.b64decode(base64.b64decode(held["AGENTPROCESS_SECRET_KEY"]), validate=True)
    assert len(key) >= 32
    assert base64.b64decode(held["AGENTPROCESS_SECRET_KEY"]).decode() != url_secret


# --- the migrations hook -------------------------------------------------------------------


def test_migrations_run_first_from_a_secret_that_exists_then(rendered):
    which, docs = rendered
    (job,) = of_kind(docs, "Job")
    annotations = job["metadata"]["annotations"]
    assert set(annotations["helm.sh/hook"].split(",")) == {"pre-install", "pre-upgrade"}
    assert set(annotations["helm.sh/hook-delete-policy"].split(",")) == {"before-hook-creation", "hook-succeeded"}
    job_weight = int(annotations["helm.sh/hook-weight"])
    assert job["spec"]["backoffLimit"] >= 1
    assert job["spec"]["activeDeadlineSeconds"] > 0
    spec = job["spec"]["template"]["spec"]
    assert spec["restartPolicy"] == "Never"
    # The chart's ServiceAccount, ConfigMaps and Secret are created after pre-install
    # hooks: the Job may use none of them.
    assert "serviceAccountName" not in spec
    (container,) = spec["containers"]
    assert container["command"] == ["agentprocess-api"] and container["args"] == ["migrate"]
    assert "envFrom" not in container
    reference = env_of(container)["AGENTPROCESS_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    assert reference.get("optional") is not True
    hooks = {doc["metadata"]["name"]: doc for doc in of_kind(docs, "Secret") if is_hook(doc)}
    if which == "production":
        assert reference["name"] == "agentprocess-secrets"  # existingSecret, made beforehand
        assert not of_kind(docs, "Secret")
    else:
        source = hooks[reference["name"]]
        hook = source["metadata"]["annotations"]
        assert set(hook["helm.sh/hook"].split(",")) == {"pre-install", "pre-upgrade"}
        assert int(hook["helm.sh/hook-weight"]) < job_weight
        assert "before-hook-creation" in hook["helm.sh/hook-delete-policy"]
        assert reference["key"] in source["data"]
        # Only the database URL goes to the hook's Secret.
        assert set(source["data"]) == {"AGENTPROCESS_DATABASE_URL"}
    # Nothing else is a hook: the servers' own resources are ordinary release resources.
    assert all(not is_hook(doc) for doc in docs if doc["kind"] not in ("Job", "Secret"))
    assert all(not is_hook(doc) for doc in of_kind(docs, "Secret") if doc["metadata"]["name"] not in hooks)


def test_migrations_can_be_left_out(tmp_path):
    docs = render(DEFAULT, extra={"migrations": {"enabled": False}}, tmp_path=tmp_path)
    assert not of_kind(docs, "Job")
    assert not [doc for doc in docs if is_hook(doc)]


# --- secrets and settings ------------------------------------------------------------------


def test_secrets_stay_out_of_configmaps(tmp_path):
    markers = {
        "AGENTPROCESS_DATABASE_URL": "postgres://agentprocess:pw-marker-db@db:5432/agentprocess",
        "AGENTPROCESS_REDIS_URL": "redis://:pw-marker-redis@redis:6379/0",
        "AGENTPROCESS_S3_ACCESS_KEY_ID": "AKIAMARKERKEYID",
        "AGENTPROCESS_S3_SECRET_ACCESS_KEY": "marker-secret-access-key",
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer marker-otlp-token",
    }
    url_secret = base64.b64encode(b"u" * 40).decode()
    secret_key = base64.b64encode(b"s" * 40).decode()
    codes = ["marker-code-one", "marker code two"]
    docs = render(
        DEFAULT,
        extra={
            "database": {"url": markers["AGENTPROCESS_DATABASE_URL"]},
            "redis": {"url": markers["AGENTPROCESS_REDIS_URL"]},
            "s3": {
                "accessKeyId": markers["AGENTPROCESS_S3_ACCESS_KEY_ID"],
                "secretAccessKey": markers["AGENTPROCESS_S3_SECRET_ACCESS_KEY"],
            },
            "otel": {"endpoint": "http://collector:4318", "headers": markers["OTEL_EXPORTER_OTLP_HEADERS"]},
            "urlSecret": url_secret,
            "secretKey": secret_key,
            "signup": {"policy": "invite", "codes": codes},
        },
        tmp_path=tmp_path,
    )
    secrets = {
        **markers,
        "AGENTPROCESS_URL_SECRET": url_secret,
        "AGENTPROCESS_SECRET_KEY": secret_key,
        "AGENTPROCESS_SIGNUP_CODES": ",".join(codes),
    }
    required = ("AGENTPROCESS_DATABASE_URL", "AGENTPROCESS_URL_SECRET", "AGENTPROCESS_SECRET_KEY")
    for doc in docs:
        if doc["kind"] == "Secret":
            continue
        text = yaml.safe_dump(doc)
        for name, value in {**secrets, "one sign-up code": codes[0], "another": codes[1]}.items():
            assert value not in text, f"{name} appears in {doc['kind']}/{doc['metadata']['name']}"
    secret = named(docs, "Secret", RELEASE + "-agentprocess")
    held = {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}
    assert held == secrets
    api = named(docs, "Deployment", "-api")["spec"]["template"]["spec"]["containers"][0]
    scheduler = named(docs, "Deployment", "-scheduler")["spec"]["template"]["spec"]["containers"][0]
    for name in secrets:
        reference = env_of(api)[name]["valueFrom"]["secretKeyRef"]
        assert reference == {
            "name": secret["metadata"]["name"],
            "key": name,
            **({"optional": True} if name not in required else {}),
        }
    # The scheduler signs no URLs, touches no evidence and signs nobody in; it opens the
    # webhook signing secrets the API sealed.
    assert set(env_of(scheduler)) & set(secrets) == {
        "AGENTPROCESS_DATABASE_URL",
        "AGENTPROCESS_REDIS_URL",
        "AGENTPROCESS_SECRET_KEY",
        "OTEL_EXPORTER_OTLP_HEADERS",
    }
    assert env_of(scheduler)["AGENTPROCESS_SECRET_KEY"] == env_of(api)["AGENTPROCESS_SECRET_KEY"]


@pytest.mark.parametrize(
    "value, name", [("urlSecret", "AGENTPROCESS_URL_SECRET"), ("secretKey", "AGENTPROCESS_SECRET_KEY")]
)
def test_key_given_is_kept(value, name):
    key = base64.b64encode(bytes(range(32))).decode()
    for _ in range(2):
        docs = render(DEFAULT, sets=[f"{value}={key}"])
        secret = named(docs, "Secret", RELEASE + "-agentprocess")
        assert base64.b64decode(secret["data"][name]).decode() == key
        (api,) = named(docs, "Deployment", "-api")["spec"]["template"]["spec"]["containers"]
        assert env_of(api)[name]["valueFrom"]["secretKeyRef"] == {"name": secret["metadata"]["name"], "key": name}


def test_previous_secret_keys_are_kept_for_the_api_and_the_scheduler(tmp_path):
    previous = [base64.b64encode(bytes([n]) * 32).decode() for n in (1, 2)]
    docs = render(DEFAULT, extra={"previousSecretKeys": previous}, tmp_path=tmp_path)
    secret = named(docs, "Secret", RELEASE + "-agentprocess")
    assert base64.b64decode(secret["data"]["AGENTPROCESS_PREVIOUS_SECRET_KEYS"]).decode() == ",".join(previous)
    for component in ("-api", "-scheduler"):
        (container,) = named(docs, "Deployment", component)["spec"]["template"]["spec"]["containers"]
        assert env_of(container)["AGENTPROCESS_PREVIOUS_SECRET_KEYS"]["valueFrom"]["secretKeyRef"] == {
            "name": secret["metadata"]["name"], "key": "AGENTPROCESS_PREVIOUS_SECRET_KEYS", "optional": True}


def test_existing_secret_is_read_and_none_is_made(tmp_path):
    docs = render(
        DEFAULT,
        extra={"existingSecret": "mine", "database": {"url": ""}},
        tmp_path=tmp_path,
    )
    assert not of_kind(docs, "Secret")
    for _, spec in pod_specs(docs):
        for container in spec["containers"]:
            for item in container["env"]:
                reference = item.get("valueFrom", {}).get("secretKeyRef")
                if reference:
                    assert reference["name"] == "mine"
    (api,) = named(docs, "Deployment", "-api")["spec"]["template"]["spec"]["containers"]
    (scheduler,) = named(docs, "Deployment", "-scheduler")["spec"]["template"]["spec"]["containers"]
    # The sealing key is required there, like the URL key (which the scheduler does not
    # get); previous keys and sign-up codes are optional.
    for name in ("AGENTPROCESS_URL_SECRET", "AGENTPROCESS_SECRET_KEY"):
        assert env_of(api)[name]["valueFrom"]["secretKeyRef"] == {"name": "mine", "key": name}
    assert "AGENTPROCESS_URL_SECRET" not in env_of(scheduler)
    for container in (api, scheduler):
        assert env_of(container)["AGENTPROCESS_SECRET_KEY"]["valueFrom"]["secretKeyRef"] == {
            "name": "mine", "key": "AGENTPROCESS_SECRET_KEY"}
        assert env_of(container)["AGENTPROCESS_PREVIOUS_SECRET_KEYS"]["valueFrom"]["secretKeyRef"] == {
            "name": "mine", "key": "AGENTPROCESS_PREVIOUS_SECRET_KEYS", "optional": True}
    codes = {"name": "mine", "key": "AGENTPROCESS_SIGNUP_CODES", "optional": True}
    assert env_of(api)["AGENTPROCESS_SIGNUP_CODES"]["valueFrom"]["secretKeyRef"] == codes
    assert "AGENTPROCESS_SIGNUP_CODES" not in env_of(scheduler)


def test_server_settings():
    docs = render(DEFAULT)
    api = named(docs, "ConfigMap", "-api")["data"]
    scheduler = named(docs, "ConfigMap", "-scheduler")["data"]
    assert api["AGENTPROCESS_LISTEN"] == "0.0.0.0:8080"
    assert api["AGENTPROCESS_PUBLIC_URL"] == "https://process.example.com"
    assert api["AGENTPROCESS_S3_BUCKET"] == "agentprocess-evidence"
    assert api["AGENTPROCESS_S3_PREFIX"] == "evidence/"
    assert "AGENTPROCESS_BLOB_DIR" not in api
    # Timers and webhooks are the scheduler's: the API never runs them.
    assert api["AGENTPROCESS_NO_TIMERS"] == "true"
    assert api["AGENTPROCESS_LOG_JSON"] == "true"
    assert scheduler["AGENTPROCESS_SCHEDULER_LISTEN"] == "0.0.0.0:8081"
    assert scheduler["AGENTPROCESS_TIMER_POLL_SECONDS"] == "0.1"
    # Tenants' endpoints get short timeouts and a share of the sends each.
    assert scheduler["AGENTPROCESS_WEBHOOK_TIMEOUT_SECONDS"] == "5"
    assert scheduler["AGENTPROCESS_WEBHOOK_CONNECT_TIMEOUT_SECONDS"] == "2"
    assert scheduler["AGENTPROCESS_WEBHOOK_CONCURRENCY_PER_ORGANIZATION"] == "2"
    # The scheduler links to the pages in the messages it sends; it holds no evidence.
    assert scheduler["AGENTPROCESS_PUBLIC_URL"] == "https://process.example.com"
    assert "AGENTPROCESS_S3_BUCKET" not in scheduler
    assert "AGENTPROCESS_SMTP_URL" not in scheduler, "no email unless configured"
    for config in (api, scheduler):
        assert "AGENTPROCESS_METRICS_LISTEN" not in config
        assert not [name for name in config if name.startswith("OTEL_EXPORTER")]
    # Each Deployment reads its own ConfigMap.
    for suffix in ("-api", "-scheduler"):
        (container,) = named(docs, "Deployment", suffix)["spec"]["template"]["spec"]["containers"]
        config = named(docs, "ConfigMap", suffix)["metadata"]["name"]
        assert container["envFrom"] == [{"configMapRef": {"name": config}}]


def test_mail_is_the_schedulers_with_its_password_mounted(tmp_path):
    docs = render(
        DEFAULT,
        extra={"mail": {"smtpUrl": "smtps://processes@smtp.example.com:465", "from": "Processes <p@example.com>",
                        "passwordSecret": {"name": "smtp", "key": "pw"}}},
        tmp_path=tmp_path,
    )
    scheduler = named(docs, "ConfigMap", "-scheduler")["data"]
    assert scheduler["AGENTPROCESS_SMTP_URL"] == "smtps://processes@smtp.example.com:465"
    assert scheduler["AGENTPROCESS_MAIL_FROM"] == "Processes <p@example.com>"
    assert scheduler["AGENTPROCESS_SMTP_TIMEOUT_SECONDS"] == "30"
    assert "AGENTPROCESS_SMTP_URL" not in named(docs, "ConfigMap", "-api")["data"]
    pod = named(docs, "Deployment", "-scheduler")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["AGENTPROCESS_SMTP_PASSWORD_FILE"] == "/var/run/secrets/agentprocess/smtp/password"
    mount = next(m for m in container["volumeMounts"] if m["name"] == "smtp-password")
    assert mount["readOnly"] is True and mount["mountPath"] == "/var/run/secrets/agentprocess/smtp"
    volume = next(v for v in pod["volumes"] if v["name"] == "smtp-password")
    assert volume["secret"]["secretName"] == "smtp"
    assert volume["secret"]["items"] == [{"key": "pw", "path": "password"}]


def test_sign_in_settings(tmp_path):
    """Sign-up policy, session and identity-provider timeouts reach the API (through its
    ConfigMap), the server's defaults unless set; sign-up codes go to the Secret, and only
    when there are some."""
    docs = render(DEFAULT)
    api = named(docs, "ConfigMap", "-api")["data"]
    assert api["AGENTPROCESS_SIGNUP"] == "closed"
    assert api["AGENTPROCESS_SESSION_IDLE_SECONDS"] == "28800"
    assert api["AGENTPROCESS_SESSION_ABSOLUTE_SECONDS"] == "86400"
    assert api["AGENTPROCESS_OIDC_TIMEOUT_SECONDS"] == "10"
    assert api["AGENTPROCESS_ACCESS_TOKEN_SECONDS"] == "3600"
    assert "AGENTPROCESS_OIDC_ALLOW_HOSTS" not in api
    # The server's own protective limits: an address is the client's, as the trusted
    # proxies name it, not the ingress's.
    assert (api["AGENTPROCESS_SIGN_INS_PER_ADDRESS"], api["AGENTPROCESS_SIGN_INS_PER_ORGANIZATION"],
            api["AGENTPROCESS_TOKEN_FAILURES_PER_ADDRESS"], api["AGENTPROCESS_TOKEN_FAILURES_PER_CLIENT"],
            api["AGENTPROCESS_CLIENT_REGISTRATIONS_PER_HOUR"]) == ("120", "600", "120", "30", "20")
    secret = named(docs, "Secret", RELEASE + "-agentprocess")
    assert "AGENTPROCESS_SIGNUP_CODES" not in secret["data"]
    (container,) = named(docs, "Deployment", "-api")["spec"]["template"]["spec"]["containers"]
    assert container["envFrom"] == [{"configMapRef": {"name": named(docs, "ConfigMap", "-api")["metadata"]["name"]}}]
    # The codes are read only if the Secret holds them.
    assert env_of(container)["AGENTPROCESS_SIGNUP_CODES"]["valueFrom"]["secretKeyRef"] == {
        "name": secret["metadata"]["name"],
        "key": "AGENTPROCESS_SIGNUP_CODES",
        "optional": True,
    }

    docs = render(
        DEFAULT,
        extra={
            "signup": {"policy": "invite", "codes": ["spring-2026", "partner code"]},
            "sessions": {"idleSeconds": 3600, "absoluteSeconds": 43200},
            "oidc": {"timeoutSeconds": 2.5, "allowHosts": ["sso.corp.internal", "keycloak:8443"]},
            "anonymous": {"signInsPerAddress": 50},
        },
        tmp_path=tmp_path,
    )
    api = named(docs, "ConfigMap", "-api")["data"]
    assert api["AGENTPROCESS_SIGNUP"] == "invite"
    assert api["AGENTPROCESS_SESSION_IDLE_SECONDS"] == "3600"
    assert api["AGENTPROCESS_SESSION_ABSOLUTE_SECONDS"] == "43200"
    assert api["AGENTPROCESS_OIDC_TIMEOUT_SECONDS"] == "2.5"
    assert api["AGENTPROCESS_OIDC_ALLOW_HOSTS"] == "sso.corp.internal,keycloak:8443"
    assert api["AGENTPROCESS_SIGN_INS_PER_ADDRESS"] == "50"
    secret = named(docs, "Secret", RELEASE + "-agentprocess")
    assert base64.b64decode(secret["data"]["AGENTPROCESS_SIGNUP_CODES"]).decode() == "spring-2026,partner code"
    # The scheduler signs nobody in.
    scheduler = named(docs, "ConfigMap", "-scheduler")["data"]
    sign_in = ("AGENTPROCESS_SIGNUP", "AGENTPROCESS_SESSION", "AGENTPROCESS_OIDC", "AGENTPROCESS_SIGN_INS",
               "AGENTPROCESS_TOKEN_FAILURES")
    assert not [name for name in scheduler if name.startswith(sign_in)]

    production = named(render(PRODUCTION), "ConfigMap", "-api")["data"]
    assert production["AGENTPROCESS_SIGNUP"] == "invite"  # the codes are in existingSecret
    assert production["AGENTPROCESS_SESSION_IDLE_SECONDS"] == "14400"
    assert production["AGENTPROCESS_OIDC_TIMEOUT_SECONDS"] == "5"


def test_large_numbers_are_written_as_the_server_parses_them(tmp_path):
    docs = render(
        DEFAULT,
        extra={
            "evidence": {"maxUploadBytes": 104857600, "uncitedUploadSeconds": 2592000},
            "api": {"runDataBytes": 4194304},
        },
        tmp_path=tmp_path,
    )
    api = named(docs, "ConfigMap", "-api")["data"]
    assert api["AGENTPROCESS_MAX_UPLOAD_BYTES"] == "104857600"
    assert api["AGENTPROCESS_UNCITED_UPLOAD_SECONDS"] == "2592000"
    assert api["AGENTPROCESS_RUN_DATA_BYTES"] == "4194304"


def test_limits_per_organization(tmp_path):
    api = named(render(DEFAULT), "ConfigMap", "-api")["data"]
    assert api["AGENTPROCESS_ORG_CALLS_PER_SECOND"] == "1000"
    assert api["AGENTPROCESS_ORG_STORED_BYTES"] == "107374182400"
    # Unset, the server bounds calls in progress by its own pool.
    assert "AGENTPROCESS_ORG_CONCURRENT_CALLS" not in api
    limits = {"callsPerSecond": 0, "concurrentCalls": 12, "openRuns": 5000}
    api = named(render(DEFAULT, extra={"limits": limits}, tmp_path=tmp_path), "ConfigMap", "-api")["data"]
    assert (api["AGENTPROCESS_ORG_CALLS_PER_SECOND"], api["AGENTPROCESS_ORG_CONCURRENT_CALLS"]) == ("0", "12")
    assert api["AGENTPROCESS_ORG_OPEN_RUNS"] == "5000"
    assert "AGENTPROCESS_ORG_CALLS_PER_SECOND" not in named(render(DEFAULT), "ConfigMap", "-scheduler")["data"]


def test_resource_attributes_name_the_pod(rendered):
    _, docs = rendered
    for suffix in ("-api", "-scheduler"):
        (container,) = named(docs, "Deployment", suffix)["spec"]["template"]["spec"]["containers"]
        names = [item["name"] for item in container["env"]]
        attributes = env_of(container)["OTEL_RESOURCE_ATTRIBUTES"]["value"]
        pairs = dict(pair.split("=", 1) for pair in attributes.split(","))
        assert pairs["k8s.namespace.name"] == "$(K8S_NAMESPACE_NAME)"
        assert pairs["k8s.pod.name"] == "$(K8S_POD_NAME)"
        assert pairs["service.version"] == "0.1.0"
        # Kubernetes expands $(VAR) only from variables defined before it.
        for variable, field in (("K8S_NAMESPACE_NAME", "metadata.namespace"), ("K8S_POD_NAME", "metadata.name")):
            assert names.index(variable) < names.index("OTEL_RESOURCE_ATTRIBUTES")
            assert env_of(container)[variable]["valueFrom"]["fieldRef"]["fieldPath"] == field


def test_production_observability():
    docs = render(PRODUCTION)
    for suffix in ("-api", "-scheduler"):
        config = named(docs, "ConfigMap", suffix)["data"]
        assert config["AGENTPROCESS_METRICS_LISTEN"] == "0.0.0.0:9464"
        assert config["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector.observability.svc:4317"
        assert config["OTEL_EXPORTER_OTLP_PROTOCOL"] == "grpc"
        assert config["OTEL_TRACES_SAMPLER_ARG"] == "0.2"
        (container,) = named(docs, "Deployment", suffix)["spec"]["template"]["spec"]["containers"]
        assert {"name": "metrics", "containerPort": 9464, "protocol": "TCP"} in container["ports"]
        service = named(docs, "Service", suffix)
        assert {port["name"]: port["targetPort"] for port in service["spec"]["ports"]}["metrics"] == "metrics"
        attributes = env_of(container)["OTEL_RESOURCE_ATTRIBUTES"]["value"]
        assert "deployment.environment.name=production" in attributes.split(",")
    (monitor,) = of_kind(docs, "ServiceMonitor")
    endpoint = {"port": "metrics", "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s"}
    assert monitor["spec"]["endpoints"] == [endpoint]
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    # It selects exactly the two Services.
    selector = monitor["spec"]["selector"]
    selected = [
        service["metadata"]["name"]
        for service in of_kind(docs, "Service")
        if selector["matchLabels"].items() <= service["metadata"]["labels"].items()
        and service["metadata"]["labels"]["app.kubernetes.io/component"] in selector["matchExpressions"][0]["values"]
    ]
    assert sorted(selected) == ["agentprocess-api", "agentprocess-scheduler"]


def test_evidence_on_a_volume(tmp_path):
    values = {"s3": {"bucket": ""}, "evidence": {"existingClaim": "evidence-rwx"}}
    docs = render(DEFAULT, extra=values, tmp_path=tmp_path)
    api = named(docs, "ConfigMap", "-api")["data"]
    assert api["AGENTPROCESS_BLOB_DIR"] == "/var/lib/agentprocess/evidence"
    assert not [name for name in api if name.startswith("AGENTPROCESS_S3_")]
    spec = named(docs, "Deployment", "-api")["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    assert volumes["evidence"]["persistentVolumeClaim"] == {"claimName": "evidence-rwx"}
    mounts = {mount["name"]: mount["mountPath"] for mount in spec["containers"][0]["volumeMounts"]}
    assert mounts["evidence"] == "/var/lib/agentprocess/evidence"
    scheduler = named(docs, "Deployment", "-scheduler")["spec"]["template"]["spec"]
    assert "evidence" not in {volume["name"] for volume in scheduler["volumes"]}


# --- optional resources --------------------------------------------------------------------


def test_optional_resources_are_off_by_default():
    docs = render(DEFAULT)
    for kind in ("Ingress", "NetworkPolicy", "ServiceMonitor"):
        assert not of_kind(docs, kind), kind
    for service in of_kind(docs, "Service"):
        assert [port["name"] for port in service["spec"]["ports"]] == ["http"]


def test_metrics_without_a_service_monitor(tmp_path):
    docs = render(
        DEFAULT,
        extra={"metrics": {"prometheus": {"enabled": True, "serviceMonitor": {"enabled": False}}}},
        tmp_path=tmp_path,
    )
    assert not of_kind(docs, "ServiceMonitor")
    assert named(docs, "ConfigMap", "-api")["data"]["AGENTPROCESS_METRICS_LISTEN"] == "0.0.0.0:9464"


def test_ingress(tmp_path):
    docs = render(DEFAULT, extra={"ingress": {"enabled": True}, "trustedProxies": ["10.42.0.0/16", "fd00:42::/56"]},
                  tmp_path=tmp_path)
    (ingress,) = of_kind(docs, "Ingress")
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "process.example.com"  # from publicUrl
    (path,) = rule["http"]["paths"]
    assert path["path"] == "/"
    assert path["backend"]["service"] == {
        "name": named(docs, "Service", "-api")["metadata"]["name"],
        "port": {"name": "http"},
    }
    # The ingress's pods are the API's trusted proxies; the scheduler serves no clients.
    assert named(docs, "ConfigMap", "-api")["data"]["AGENTPROCESS_TRUSTED_PROXIES"] == "10.42.0.0/16,fd00:42::/56"
    assert "AGENTPROCESS_TRUSTED_PROXIES" not in named(docs, "ConfigMap", "-scheduler")["data"]
    production = render(PRODUCTION)
    assert named(production, "ConfigMap", "-api")["data"]["AGENTPROCESS_TRUSTED_PROXIES"] == "10.244.250.0/24"
    (ingress,) = of_kind(production, "Ingress")
    assert ingress["spec"]["tls"] == [{"secretName": "process-example-com-tls", "hosts": ["process.example.com"]}]
    assert ingress["spec"]["ingressClassName"] == "nginx"


def test_network_policy(tmp_path):
    docs = render(PRODUCTION)
    policies = {doc["metadata"]["name"]: doc["spec"] for doc in of_kind(docs, "NetworkPolicy")}
    assert set(policies) == {"agentprocess-api", "agentprocess-scheduler"}
    api, scheduler = policies["agentprocess-api"], policies["agentprocess-scheduler"]
    assert api["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "api"
    # Egress allows everything by default: webhooks go to any public address.
    assert api["egress"] == [{}] and scheduler["egress"] == [{}]
    ports = lambda spec: sorted(port["port"] for rule in spec["ingress"] for port in rule["ports"])  # noqa: E731
    assert ports(api) == ["http", "metrics"]
    assert ports(scheduler) == ["http", "metrics"]
    metrics = [rule for rule in scheduler["ingress"] if rule["ports"][0]["port"] == "metrics"][0]
    monitoring = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    assert metrics["from"] == [monitoring]

    narrow = render(
        DEFAULT,
        extra={
            "networkPolicy": {
                "enabled": True,
                "egress": {
                    "allowAll": False,
                    "rules": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"port": 5432}]}],
                },
            }
        },
        tmp_path=tmp_path,
    )
    for policy in of_kind(narrow, "NetworkPolicy"):
        egress = policy["spec"]["egress"]
        assert {"port": 53, "protocol": "UDP"} in egress[0]["ports"]
        assert egress[1] == {"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"port": 5432}]}
        assert "from" not in policy["spec"]["ingress"][0]  # the API port from anywhere by default
        kubernetes_validate.validate(policy, KUBERNETES_VERSION, strict=True)


# --- scaling -------------------------------------------------------------------------------


def test_api_autoscales_by_default():
    docs = render(DEFAULT)
    (hpa,) = of_kind(docs, "HorizontalPodAutoscaler")
    api = named(docs, "Deployment", "-api")
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": api["metadata"]["name"]}
    assert hpa["spec"]["scaleTargetRef"] == target
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu" and metric["resource"]["target"]["type"] == "Utilization"
    assert "replicas" not in api["spec"], "the HPA owns the replica count"
    assert named(docs, "Deployment", "-scheduler")["spec"]["replicas"] == 2
    budgets = {doc["metadata"]["name"].rsplit("-", 1)[1]: doc["spec"] for doc in of_kind(docs, "PodDisruptionBudget")}
    assert budgets["api"]["minAvailable"] == 1 and budgets["scheduler"]["minAvailable"] == 1
    assert budgets["api"]["selector"]["matchLabels"] == api["spec"]["selector"]["matchLabels"]


def test_the_defaults_fit_a_stock_postgresql_through_a_rolling_update():
    """Every pod the defaults can run at once, during a rolling update (a quarter more
    API pods, one more scheduler) and with the migrations Job, fits PostgreSQL's stock
    max_connections of 100 less its 3 reserved connections."""
    docs = render(DEFAULT)
    (hpa,) = of_kind(docs, "HorizontalPodAutoscaler")
    api, scheduler = named(docs, "Deployment", "-api"), named(docs, "Deployment", "-scheduler")

    def connections(component: str) -> int:
        return int(named(docs, "ConfigMap", f"-{component}")["data"]["AGENTPROCESS_MAX_CONNECTIONS"])

    api_pods = hpa["spec"]["maxReplicas"]
    surge = api["spec"]["strategy"]["rollingUpdate"]["maxSurge"]
    assert surge == "25%"
    api_pods += -(-api_pods // 4)
    scheduler_pods = scheduler["spec"]["replicas"] + scheduler["spec"]["strategy"]["rollingUpdate"]["maxSurge"]
    total = api_pods * connections("api") + scheduler_pods * connections("scheduler") + 1
    assert total <= 97, total


def test_fixed_replicas_and_max_unavailable(tmp_path):
    docs = render(
        DEFAULT,
        extra={
            "api": {
                "autoscaling": {"enabled": False},
                "replicaCount": 4,
                "podDisruptionBudget": {"maxUnavailable": "25%"},
            }
        },
        tmp_path=tmp_path,
    )
    assert not of_kind(docs, "HorizontalPodAutoscaler")
    assert named(docs, "Deployment", "-api")["spec"]["replicas"] == 4
    budget = named(docs, "PodDisruptionBudget", "-api")["spec"]
    assert budget["maxUnavailable"] == "25%" and "minAvailable" not in budget


def test_api_spreads_over_zones_and_nodes(tmp_path):
    docs = render(DEFAULT)
    spec = named(docs, "Deployment", "-api")["spec"]
    constraints = spec["template"]["spec"]["topologySpreadConstraints"]
    assert [c["topologyKey"] for c in constraints] == ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]
    for constraint in constraints:
        assert constraint["whenUnsatisfiable"] == "ScheduleAnyway"
        assert constraint["labelSelector"]["matchLabels"] == spec["selector"]["matchLabels"]
    own = [{"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}]
    docs = render(DEFAULT, extra={"api": {"topologySpreadConstraints": own}}, tmp_path=tmp_path)
    assert named(docs, "Deployment", "-api")["spec"]["template"]["spec"]["topologySpreadConstraints"] == own


# --- values the chart refuses ----------------------------------------------------------------


@pytest.mark.parametrize(
    "values, message",
    [
        ({"unknownSetting": True}, "additional properties 'unknownSetting' not allowed"),
        ({"api": {"replicaCount": "two"}}, "/api/replicaCount"),
        ({"api": {"maxConections": 5}}, "maxConections"),
        ({"urlSecret": "c2hvcnQ="}, "/urlSecret"),
        ({"secretKey": "c2hvcnQ="}, "/secretKey"),
        ({"secretKey": "not base64 at all, though longer than forty-four chars"}, "/secretKey"),
        ({"signup": {"policy": "maybe"}}, "/signup/policy"),
        ({"signup": {"policy": "Open"}}, "/signup/policy"),
        ({"signup": {"codes": "spring-2026"}}, "/signup/codes"),
        ({"signup": {"codes": ["spring,2026"]}}, "/signup/codes/0"),
        ({"signup": {"codes": [""]}}, "/signup/codes/0"),
        ({"sessions": {"idleSeconds": 0}}, "/sessions/idleSeconds"),
        ({"sessions": {"absoluteSeconds": 31536001}}, "/sessions/absoluteSeconds"),
        ({"sessions": {"idleSeconds": "8h"}}, "/sessions/idleSeconds"),
        ({"oidc": {"timeoutSeconds": 0}}, "/oidc/timeoutSeconds"),
        ({"oidc": {"allowPrivateIssuers": True}}, "allowPrivateIssuers"),
        ({"otel": {"protocol": "thrift"}}, "/otel/protocol"),
        ({"database": {"url": "mysql://db/agentprocess"}}, "/database/url"),
        ({"trustedProxies": "10.0.0.0/8"}, "/trustedProxies"),
        ({"trustedProxies": ["10.0.0.0/8,fd00::/8"]}, "/trustedProxies/0"),
        ({"trustedProxies": ["ingress-nginx"]}, "/trustedProxies/0"),
    ],
)
def test_schema_refuses(values, message, tmp_path):
    error = refused(DEFAULT, extra=values, tmp_path=tmp_path)
    assert "values don't meet the specifications of the schema" in error
    assert message in error


def test_evidence_needs_a_bucket_or_a_claim(tmp_path):
    error = refused(DEFAULT, extra={"s3": {"bucket": ""}}, tmp_path=tmp_path)
    assert "s3.bucket (evidence in S3) or evidence.existingClaim (evidence on a ReadWriteMany volume)" in error
    error = refused(DEFAULT, extra={"evidence": {"existingClaim": "evidence-rwx"}}, tmp_path=tmp_path)
    assert "set s3.bucket or evidence.existingClaim, not both" in error


def test_required_values_are_named():
    done = helm("template", RELEASE, str(CHART), "--kube-version", KUBERNETES_VERSION)
    assert done.returncode != 0
    for needed in ("publicUrl", "database.url", "existingSecret", "s3.bucket", "evidence.existingClaim"):
        assert needed in done.stderr


@pytest.mark.parametrize(
    "values, message",
    [
        ({"existingSecret": "mine"}, "with existingSecret, database.url belongs in that Secret"),
        ({"s3": {"accessKeyId": "AKIA"}}, "give both s3.accessKeyId and s3.secretAccessKey, or neither"),
        ({"terminationGracePeriodSeconds": 30}, "must be above shutdown.delaySeconds + shutdown.graceSeconds"),
        (
            {"existingSecret": "mine", "database": {"url": ""}, "secretKey": base64.b64encode(b"s" * 32).decode()},
            "with existingSecret, secretKey belongs in that Secret",
        ),
        (
            {"existingSecret": "mine", "database": {"url": ""}, "signup": {"policy": "invite", "codes": ["spring"]}},
            "with existingSecret, signup.codes belongs in that Secret",
        ),
        ({"signup": {"policy": "invite"}}, "signup.policy invite needs sign-up codes: list them in signup.codes"),
        ({"ingress": {"enabled": True}}, "ingress.enabled needs trustedProxies"),
    ],
)
def test_inconsistent_values_are_refused(values, message, tmp_path):
    assert message in refused(DEFAULT, extra=values, tmp_path=tmp_path)


def test_invite_with_codes_in_an_existing_secret(tmp_path):
    """With existingSecret the codes are that Secret's business: invite renders."""
    docs = render(
        DEFAULT,
        extra={"existingSecret": "mine", "database": {"url": ""}, "signup": {"policy": "invite"}},
        tmp_path=tmp_path,
    )
    assert named(docs, "ConfigMap", "-api")["data"]["AGENTPROCESS_SIGNUP"] == "invite"


def test_development_only_settings_stay_out_of_the_chart(rendered):
    """The server's development switches (private identity providers, sign-in with no
    provider, hooks over plain http) have no value in the chart and are set by no
    render."""
    switches = ("AGENTPROCESS_OIDC_ALLOW_PRIVATE_ISSUERS", "AGENTPROCESS_DANGEROUSLY_ALLOW_DEV_SIGN_IN",
                "AGENTPROCESS_ALLOW_PLAIN_HTTP_HOOKS")
    sources = [CHART / "values.yaml", CHART / "values.schema.json", *sorted((CHART / "templates").iterdir())]
    for path in sources:
        text = path.read_text()
        for word in (*switches, "allowPrivateIssuers", "dangerously", "devSignIn", "plainHttp"):
            assert word.lower() not in text.lower(), f"{word} in {path.name}"
    _, docs = rendered
    text = yaml.safe_dump_all(docs)
    for switch in switches:
        assert switch not in text
