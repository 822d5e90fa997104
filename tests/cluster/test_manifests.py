"""manifests/: every object validates against the Kubernetes schemas, overlays build, and the pieces fit.

The kustomize builds run `kubectl kustomize` (kustomize built into kubectl); they are skipped, with the
reason shown, where kubectl is not installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from webhook.cluster.resources import watch_specs
from webhook.commands import parse
from webhook.config.catalog import CATALOG
from webhook.config.settings import ENV_PREFIX, PROMETHEUS_FIELDS, Settings, load_settings
from webhook.server.selfsigned import write_certificates

from .helpers import usable_kubectl

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
# cert-manager's and prometheus-operator's CRDs have no schema in kubernetes-validate; checked by hand
# below and in test_monitoring.py instead.
CERT_MANAGER = {("cert-manager.io/v1", "Issuer"), ("cert-manager.io/v1", "Certificate")}
PROMETHEUS_OPERATOR = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"), ("monitoring.coreos.com/v1", "PrometheusRule")
}
COMPONENTS = sorted(p.name for p in (MANIFESTS / "components").iterdir() if p.is_dir())
KUBECTL = usable_kubectl()
PATCHES = {"recommender-credentials.yaml"}
needs_kubectl = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl 1.27+ (kustomize v5 built in) not installed"
)


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def manifest_files() -> list[Path]:
    """Whole objects; a component's patches (partial objects) are checked in their rendered form."""
    return sorted(
        p for p in MANIFESTS.rglob("*.yaml")
        if p.name != "kustomization.yaml" and "generated" not in p.parts and p.name not in PATCHES
    )


def base_objects() -> list[dict[str, Any]]:
    return [
        doc
        for path in sorted((MANIFESTS / "base").glob("*.yaml"))
        if path.name != "kustomization.yaml"
        for doc in documents(path)
    ]


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (match,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return match


def build(directory: Path) -> list[dict[str, Any]]:
    assert KUBECTL is not None
    result = subprocess.run(
        [KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, check=True, timeout=60
    )
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def validate(obj: dict[str, Any], version: str) -> None:
    if (obj["apiVersion"], obj["kind"]) in CERT_MANAGER | PROMETHEUS_OPERATOR:
        assert obj["spec"], obj
        return
    kubernetes_validate.validate(obj, version, strict=True)


@pytest.fixture(scope="module")
def self_signed_build(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    if KUBECTL is None:
        pytest.skip("kubectl 1.27+ (kustomize v5 built in) not installed")
    copy = tmp_path_factory.mktemp("manifests") / "manifests"
    shutil.copytree(
        MANIFESTS, copy, ignore=shutil.ignore_patterns("*.crt", "*.key", "tls-secret.yaml", "cabundle.yaml")
    )
    write_certificates(copy / "overlays" / "self-signed" / "generated")
    return build(copy / "overlays" / "self-signed")


class TestSchemas:
    @pytest.mark.parametrize("version", VERSIONS)
    @pytest.mark.parametrize("path", manifest_files(), ids=lambda p: str(p.relative_to(MANIFESTS)))
    def test_every_manifest_file_validates_strictly(self, path: Path, version: str) -> None:
        for obj in documents(path):
            if obj["kind"] == "MutatingWebhookConfiguration" and "webhooks" not in obj:
                continue  # a kustomize patch (inject-ca.yaml), not a whole object
            validate(obj, version)

    @needs_kubectl
    @pytest.mark.parametrize("version", VERSIONS)
    @pytest.mark.parametrize("overlay", ["base", "overlays/cert-manager"])
    def test_every_built_object_validates_strictly(self, overlay: str, version: str) -> None:
        objects = build(MANIFESTS / overlay)
        assert len(objects) >= 14
        for obj in objects:
            validate(obj, version)

    @pytest.mark.parametrize("version", VERSIONS)
    def test_the_self_signed_build_validates_strictly(
        self, self_signed_build: list[dict[str, Any]], version: str
    ) -> None:
        for obj in self_signed_build:
            validate(obj, version)


class TestWebhookConfiguration:
    @pytest.fixture
    def webhook(self) -> dict[str, Any]:
        webhooks: list[dict[str, Any]] = find(base_objects(), "MutatingWebhookConfiguration", "pod-tailor")[
            "webhooks"
        ]
        (entry,) = webhooks
        return entry

    def test_only_pod_create_is_intercepted(self, webhook: dict[str, Any]) -> None:
        assert webhook["rules"] == [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
                "scope": "Namespaced",
            }
        ]

    def test_it_never_blocks_and_may_be_reinvoked(self, webhook: dict[str, Any]) -> None:
        assert webhook["failurePolicy"] == "Ignore"
        assert webhook["sideEffects"] == "None"
        assert webhook["timeoutSeconds"] in (2, 3)
        assert webhook["reinvocationPolicy"] == "IfNeeded"
        assert webhook["admissionReviewVersions"] == ["v1"]

    def test_namespaces_opt_in_and_system_namespaces_are_excluded(self, webhook: dict[str, Any]) -> None:
        expressions = webhook["namespaceSelector"]["matchExpressions"]
        assert {
            "key": "pod-tailor.io/mode",
            "operator": "In",
            "values": ["enforce", "dry-run"],
        } in expressions
        (names,) = [e for e in expressions if e["key"] == "kubernetes.io/metadata.name"]
        assert names["operator"] == "NotIn"
        assert set(names["values"]) == {"kube-system", "pod-tailor"}

    def test_pods_labelled_skip_are_not_sent(self, webhook: dict[str, Any]) -> None:
        assert webhook["objectSelector"] == {
            "matchExpressions": [{"key": "pod-tailor.io/skip", "operator": "NotIn", "values": ["true"]}]
        }

    def test_it_calls_the_service_on_the_mutate_path(self, webhook: dict[str, Any]) -> None:
        service = find(base_objects(), "Service", "pod-tailor")
        target = webhook["clientConfig"]["service"]
        assert (target["name"], target["namespace"]) == (
            service["metadata"]["name"],
            service["metadata"]["namespace"],
        )
        assert target["path"] == "/mutate"
        assert target["port"] in [p["port"] for p in service["spec"]["ports"]]

    @needs_kubectl
    def test_cert_manager_injects_the_ca_of_a_certificate_for_the_service(self) -> None:
        objects = build(MANIFESTS / "overlays" / "cert-manager")
        config = find(objects, "MutatingWebhookConfiguration", "pod-tailor")
        namespace, name = config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].split("/")
        certificate = find(objects, "Certificate", name)
        assert certificate["metadata"]["namespace"] == namespace
        assert "pod-tailor.pod-tailor.svc" in certificate["spec"]["dnsNames"]
        assert certificate["spec"]["secretName"] == "pod-tailor-tls"

    def test_the_self_signed_overlay_fills_the_ca_bundle_and_the_secret(
        self, self_signed_build: list[dict[str, Any]]
    ) -> None:
        config = find(self_signed_build, "MutatingWebhookConfiguration", "pod-tailor")
        (entry,) = config["webhooks"]
        assert entry["clientConfig"]["caBundle"]
        assert entry["failurePolicy"] == "Ignore"  # the patch merged into the entry, not replaced it
        secret = find(self_signed_build, "Secret", "pod-tailor-tls")
        assert secret["type"] == "kubernetes.io/tls"
        assert set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}
        assert secret["data"]["ca.crt"] == entry["clientConfig"]["caBundle"]


class TestWebhookDeployment:
    @pytest.fixture
    def deployment(self) -> dict[str, Any]:
        return find(base_objects(), "Deployment", "pod-tailor")

    def test_two_replicas_spread_over_nodes_and_protected_by_a_budget(
        self, deployment: dict[str, Any]
    ) -> None:
        assert deployment["spec"]["replicas"] == 2
        pod = deployment["spec"]["template"]
        anti = pod["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        assert anti[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
        budget = find(base_objects(), "PodDisruptionBudget", "pod-tailor")
        assert budget["spec"]["minAvailable"] == 1
        assert budget["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()

    def test_the_container_is_locked_down(self, deployment: dict[str, Any]) -> None:
        pod = deployment["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "privileged": False,
            "capabilities": {"drop": ["ALL"]},
        }
        assert container["resources"]["requests"].keys() == {"cpu", "memory"}

    def test_probes_use_the_servers_endpoints_and_shutdown_waits_for_endpoint_removal(
        self, deployment: dict[str, Any]
    ) -> None:
        pod = deployment["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert container["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
        assert container["lifecycle"]["preStop"]["sleep"]["seconds"] < pod["terminationGracePeriodSeconds"]

    def test_its_own_pods_are_never_mutated(self, deployment: dict[str, Any]) -> None:
        assert deployment["spec"]["template"]["metadata"]["labels"]["pod-tailor.io/skip"] == "true"

    @pytest.mark.parametrize("name", ["pod-tailor", "pod-tailor-recommender"])
    def test_every_environment_variable_is_one_its_verb_reads_and_args_parse(self, name: str) -> None:
        deployment = find(base_objects(), "Deployment", name)
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            args = parse(container["args"])
            read = {CATALOG[option].variable for option in args.declared}
            for env in container["env"]:
                if env["name"].startswith(ENV_PREFIX):
                    assert env["name"] in read, (container["name"], env["name"])
            assert args.command == container["args"][0]

    def test_the_recommender_runs_two_replicas_that_elect_the_one_writer(self) -> None:
        recommender = find(base_objects(), "Deployment", "pod-tailor-recommender")
        assert recommender["spec"]["replicas"] == 2
        (container,) = [c for c in recommender["spec"]["template"]["spec"]["containers"]
                        if c["name"] == "recommender"]
        args = parse(container["args"])
        assert args.leader_elect
        env = {e["name"]: e for e in container["env"]}
        assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"


class TestRbac:
    def rules(self, kind: str, name: str) -> list[dict[str, Any]]:
        rules: list[dict[str, Any]] = find(base_objects(), kind, name)["rules"]
        return rules

    def test_the_webhook_only_lists_and_watches_what_it_reads(self) -> None:
        assert self.rules("ClusterRole", "pod-tailor-webhook") == [
            {"apiGroups": [""], "resources": ["namespaces", "limitranges"], "verbs": ["list", "watch"]},
            {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"],
             "verbs": ["list", "watch"]},
            {"apiGroups": ["autoscaling.k8s.io"], "resources": ["verticalpodautoscalers"],
             "verbs": ["list", "watch"]},
            {"apiGroups": [""], "resources": ["services"], "verbs": ["list", "watch"]},
            {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses", "ingressclasses"],
             "verbs": ["list", "watch"]},
            {"apiGroups": ["gateway.networking.k8s.io"], "resources": ["httproutes", "grpcroutes"],
             "verbs": ["list", "watch"]},
            {"apiGroups": [""], "resources": ["nodes", "resourcequotas"], "verbs": ["list", "watch"]},
            {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["list", "watch"]},
        ]
        assert self.rules("Role", "pod-tailor-webhook") == [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]}
        ]

    def test_every_collection_the_webhook_watches_may_be_listed_and_watched(self) -> None:
        cluster_wide = {
            r for rule in self.rules("ClusterRole", "pod-tailor-webhook") for r in rule["resources"]
            if {"list", "watch"} <= set(rule["verbs"])
        }
        own_namespace = {r for rule in self.rules("Role", "pod-tailor-webhook") for r in rule["resources"]}
        for spec in watch_specs(Settings(policy_configmap="pod-tailor-policy")):
            assert spec.resource in cluster_wide | own_namespace, spec.resource

    def test_only_the_recommender_writes_and_only_configmaps_in_its_namespace(self) -> None:
        assert self.rules("Role", "pod-tailor-recommender") == [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "create", "update", "delete"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
             "resourceNames": ["pod-tailor-recommender"], "verbs": ["get", "update"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        ]
        writers = [
            o
            for o in base_objects()
            if o["kind"] in ("Role", "ClusterRole")
            for rule in o["rules"]
            if set(rule["verbs"]) & {"create", "update", "patch", "delete"}
        ]
        assert {w["metadata"]["name"] for w in writers} == {"pod-tailor-recommender"}

    def test_no_wildcards(self) -> None:
        for obj in base_objects():
            for rule in obj.get("rules", ()):
                assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]

    def test_bindings_name_the_service_accounts_the_deployments_run_as(self) -> None:
        objects = base_objects()
        accounts = {
            find(objects, "Deployment", d)["spec"]["template"]["spec"]["serviceAccountName"]
            for d in ("pod-tailor", "pod-tailor-recommender")
        }
        bound = {s["name"] for o in objects if o["kind"].endswith("Binding") for s in o["subjects"]}
        assert accounts == bound
        assert accounts <= {o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"}


def test_the_policy_configmap_holds_a_valid_policy() -> None:
    from webhook.config.policies import load_policy_text

    configmap = find(base_objects(), "ConfigMap", "pod-tailor-policy")
    settings = Settings()
    assert configmap["metadata"]["name"] == settings.policy_configmap
    assert configmap["metadata"]["namespace"] == settings.namespace
    assert "default" in load_policy_text(configmap["data"]["policy.yaml"]).policies


def with_components(tmp: Path, overlay: str, components: list[str]) -> list[dict[str, Any]]:
    """Render `overlay` with `components` the way a user's own overlay would (paths relative to a copy)."""
    copy = tmp / "manifests"
    if not copy.exists():
        shutil.copytree(MANIFESTS, copy, ignore=shutil.ignore_patterns("generated"))
        write_certificates(copy / "overlays" / "self-signed" / "generated")
    user = tmp / "user"
    user.mkdir(exist_ok=True)
    (user / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [f"../manifests/{overlay}"],
        "components": [f"../manifests/components/{name}" for name in components],
    }))
    return build(user)


@needs_kubectl
class TestEveryOverlayAndComponent:
    @pytest.mark.parametrize("overlay", ["base", "overlays/cert-manager", "overlays/self-signed"])
    @pytest.mark.parametrize("component", COMPONENTS)
    def test_each_component_renders_on_each_overlay_and_validates_strictly(
        self, overlay: str, component: str, tmp_path: Path
    ) -> None:
        objects = with_components(tmp_path, overlay, [component])
        assert len(objects) >= 14
        for obj in objects:
            for version in VERSIONS:
                validate(obj, version)

    def test_all_components_together(self, tmp_path: Path) -> None:
        objects = with_components(tmp_path, "overlays/cert-manager", COMPONENTS)
        kinds = {o["kind"] for o in objects}
        assert {"ServiceMonitor", "PrometheusRule", "NetworkPolicy", "Certificate"} <= kinds

    def test_the_service_monitors_scrape_named_ports_of_the_services_and_the_tls_secret_they_name(
        self, tmp_path: Path
    ) -> None:
        # With the optional controllers too, so that each controller's monitor finds its Service.
        controllers = ["startup-boost", "reports"]
        objects = with_components(tmp_path, "overlays/self-signed", ["monitoring", *controllers])
        services = [o for o in objects if o["kind"] == "Service"]
        for monitor in (o for o in objects if o["kind"] == "ServiceMonitor"):
            wanted = monitor["spec"]["selector"]["matchLabels"].items()
            (service,) = [s for s in services if wanted <= s["metadata"]["labels"].items()]
            assert service["metadata"]["namespace"] in monitor["spec"]["namespaceSelector"]["matchNames"]
            for endpoint in monitor["spec"]["endpoints"]:
                assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
                ca = endpoint.get("tlsConfig", {}).get("ca", {}).get("secret")
                if ca:
                    secret = find(objects, "Secret", ca["name"])
                    assert ca["key"] in secret["data"]
                    assert endpoint["tlsConfig"]["serverName"].startswith(f"{service['metadata']['name']}.")
        dashboard = find(objects, "ConfigMap", "pod-tailor-dashboard")
        assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert json.loads(dashboard["data"]["pod-tailor.json"])["uid"] == "pod-tailor"


class TestTheStartupBoostComponent:
    @pytest.fixture
    def objects(self, tmp_path: Path) -> list[dict[str, Any]]:
        return with_components(tmp_path, "overlays/cert-manager", ["startup-boost"])

    def test_two_replicas_elect_the_one_that_resizes(self, objects: list[dict[str, Any]]) -> None:
        deployment = find(objects, "Deployment", "pod-tailor-boost-controller")
        assert deployment["spec"]["replicas"] == 2
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        args = parse(container["args"])
        assert args.leader_elect
        assert args.lease_name == "pod-tailor-boost-controller"
        assert deployment["spec"]["template"]["metadata"]["labels"]["pod-tailor.io/skip"] == "true"
        assert container["securityContext"]["readOnlyRootFilesystem"] is True

    def test_rbac_is_exactly_the_calls_the_controller_makes(self, objects: list[dict[str, Any]]) -> None:
        assert find(objects, "ClusterRole", "pod-tailor-boost-controller")["rules"][:2] == [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch", "patch"]},
            {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]},
        ]
        webhook = find(objects, "ClusterRole", "pod-tailor-webhook")["rules"]
        rightsize = find(objects, "ClusterRole", "pod-tailor-boost-controller")["rules"][2:]
        # In-place right-sizing reads every collection the webhook reads, plus nodes and quotas.
        read = {(g, r) for rule in rightsize for g in rule["apiGroups"] for r in rule["resources"]}
        assert {(g, r) for rule in webhook for g in rule["apiGroups"] for r in rule["resources"]} <= read
        assert {("", "nodes"), ("", "resourcequotas"), ("metrics.k8s.io", "pods"), ("", "events")} <= read
        assert find(objects, "Role", "pod-tailor-boost-controller")["rules"] == [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
             "resourceNames": ["pod-tailor-boost-controller"], "verbs": ["get", "update"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]},
        ]
        for kind in ("ClusterRoleBinding", "RoleBinding"):
            (subject,) = find(objects, kind, "pod-tailor-boost-controller")["subjects"]
            assert subject["name"] == "pod-tailor-boost-controller"

    def test_its_network_policy_lets_the_metrics_port_in_and_the_api_server_out(
        self, objects: list[dict[str, Any]]
    ) -> None:
        policy = find(objects, "NetworkPolicy", "pod-tailor-boost-controller")
        deployment = find(objects, "Deployment", "pod-tailor-boost-controller")
        containers = deployment["spec"]["template"]["spec"]["containers"]
        ports = {(p["containerPort"], p["protocol"]) for c in containers for p in c.get("ports", ())}
        assert ports <= _ports(policy["spec"]["ingress"])
        assert {(443, "TCP"), (53, "UDP")} <= _ports(policy["spec"]["egress"])


class TestTheReportsComponents:
    @pytest.fixture
    def objects(self, tmp_path: Path) -> list[dict[str, Any]]:
        return with_components(tmp_path, "overlays/cert-manager", ["openreports-crd", "reports"])

    def test_the_crd_is_the_pinned_upstream_report_crd(self, objects: list[dict[str, Any]]) -> None:
        crd = find(objects, "CustomResourceDefinition", "reports.openreports.io")
        assert (crd["spec"]["group"], crd["spec"]["names"]["kind"]) == ("openreports.io", "Report")
        assert [v["name"] for v in crd["spec"]["versions"]] == ["v1alpha1"]
        text = (MANIFESTS / "components" / "openreports-crd" / "openreports.io_reports.yaml").read_text()
        assert "b7afe2eae0fdc4aa8df7252d56dbf1b191152cbd" in text.splitlines()[1], "pinned to a commit"

    def test_two_replicas_elect_the_one_that_writes(self, objects: list[dict[str, Any]]) -> None:
        deployment = find(objects, "Deployment", "pod-tailor-reports")
        assert deployment["spec"]["replicas"] == 2
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        args = parse(container["args"])
        assert args.command == "reports"
        assert args.leader_elect
        assert args.lease_name == "pod-tailor-reports"
        assert args.metrics_port == container["ports"][0]["containerPort"]
        assert deployment["spec"]["template"]["metadata"]["labels"]["pod-tailor.io/skip"] == "true"

    def test_rbac_is_exactly_the_calls_the_controller_makes(self, objects: list[dict[str, Any]]) -> None:
        from webhook.controllers.reports import GROUP, KINDS, PLURAL

        rules = find(objects, "ClusterRole", "pod-tailor-reports")["rules"]
        granted = {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]
                   for v in rule["verbs"]}  # fmt: skip
        watched = {(kind.api_version.rpartition("/")[0], kind.plural) for kind in KINDS}
        webhook = find(objects, "ClusterRole", "pod-tailor-webhook")["rules"]  # the facts admission reads
        watched |= {(g, r) for rule in webhook for g in rule["apiGroups"] for r in rule["resources"]}
        needed = {(g, r, v) for g, r in watched for v in ("list", "watch")}
        needed |= {(GROUP, PLURAL, v) for v in ("list", "watch", "create", "patch", "delete")}
        assert granted == needed
        assert find(objects, "Role", "pod-tailor-reports")["rules"] == [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
             "resourceNames": ["pod-tailor-reports"], "verbs": ["get", "update"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]},
        ]  # fmt: skip
        for kind in ("ClusterRoleBinding", "RoleBinding"):
            (subject,) = find(objects, kind, "pod-tailor-reports")["subjects"]
            assert subject["name"] == "pod-tailor-reports"


def _ports(rules: list[dict[str, Any]]) -> set[tuple[int, str]]:
    return {(p["port"], p.get("protocol", "TCP")) for rule in rules for p in rule.get("ports", ())}


class TestNetworkPolicies:
    @pytest.fixture
    def policies(self) -> list[dict[str, Any]]:
        return documents(MANIFESTS / "components" / "network-policies" / "networkpolicies.yaml")

    @pytest.mark.parametrize("name", ["pod-tailor", "pod-tailor-recommender"])
    def test_each_deployment_has_one_policy_that_lets_every_container_port_in(
        self, policies: list[dict[str, Any]], name: str
    ) -> None:
        pod = find(base_objects(), "Deployment", name)["spec"]["template"]
        (policy,) = [p for p in policies if p["spec"]["podSelector"]["matchLabels"].items()
                     <= pod["metadata"]["labels"].items()]
        assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
        opened = _ports(policy["spec"]["ingress"])
        for container in pod["spec"]["containers"]:
            for port in container.get("ports", ()):
                assert (port["containerPort"], port["protocol"]) in opened
        # The API server may come from anywhere (control plane, konnectivity): no `from` on any rule.
        assert all("from" not in rule for rule in policy["spec"]["ingress"])

    @pytest.mark.parametrize("name", ["pod-tailor-webhook", "pod-tailor-recommender"])
    def test_egress_allows_dns_and_the_api_server(self, policies: list[dict[str, Any]], name: str) -> None:
        (policy,) = [p for p in policies if p["metadata"]["name"] == name]
        allowed = _ports(policy["spec"]["egress"])
        assert {(53, "UDP"), (53, "TCP"), (443, "TCP"), (6443, "TCP")} <= allowed

    def test_the_recommender_may_reach_prometheus_and_the_webhook_may_not(
        self, policies: list[dict[str, Any]]
    ) -> None:
        by_name = {p["metadata"]["name"]: _ports(p["spec"]["egress"]) for p in policies}
        assert (9090, "TCP") in by_name["pod-tailor-recommender"]
        assert (9090, "TCP") not in by_name["pod-tailor-webhook"]


class TestPrometheusCredentials:
    @needs_kubectl
    def test_the_secret_is_mounted_as_files_and_the_settings_read_them(self, tmp_path: Path) -> None:
        objects = with_components(tmp_path, "overlays/cert-manager", ["prometheus-credentials"])
        pod = find(objects, "Deployment", "pod-tailor-recommender")["spec"]["template"]["spec"]
        (volume,) = [v for v in pod["volumes"] if "secret" in v]
        # Both processes read Prometheus: the recommender for builds, the dashboard for dry-run counts.
        assert {c["name"] for c in pod["containers"]} == {"recommender", "dashboard"}
        for container in pod["containers"]:
            (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
            assert mount["readOnly"] is True
            env = {e["name"]: e.get("value", "from-the-secret") for e in container["env"]}
            env["POD_TAILOR_PROMETHEUS_URL"] = "https://prometheus.example"  # the user's own patch
            connection = load_settings({}, env=env, only=PROMETHEUS_FIELDS).prometheus()
            assert connection is not None
            for path in (connection.password_file, connection.ca_file):
                assert path is not None
                assert path.startswith(mount["mountPath"] + "/")
            assert not any("PASSWORD" in e["name"] and "value" in e and not e["name"].endswith("_FILE")
                           for e in container["env"])
        # Files owned by root and mode 0440 are readable through fsGroup by the non-root user only.
        assert volume["secret"]["defaultMode"] == 0o440
        assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"]
