"""Readiness on the way in (the probe on the port the Service sends to), and input pod-tailor cannot read."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.podkit import container, first, pod, run
from tests.reviews import admission_review
from tests.traffic.kit import facts, ingress, route, service
from webhook.admission.cache import VerdictCache
from webhook.admission.handler import admit
from webhook.cluster.snapshot import ParseCache, traffic_index
from webhook.config.policies import bundled_policies
from webhook.core.engine import decide
from webhook.core.model.routes import parse_ingress, parse_route, parse_service
from webhook.core.snapshot import EMPTY_PROFILES, ClusterSnapshot

WEB = {"app": "web"}
PORTS = (
    {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
    {"name": "grpc", "containerPort": 9000, "protocol": "TCP"},
    {"name": "web", "containerPort": 8080, "protocol": "TCP"},
)


def probe_port(result: dict[str, Any]) -> int:
    port: int = first(result)["readinessProbe"]["tcpSocket"]["port"]
    return port


class TestTheProbePort:
    @pytest.mark.parametrize(
        ("target", "expected"),
        [(8080, 8080), ("web", 8080), (9000, 9000), ("grpc", 9000), ("9000", 9000)],
        ids=["number", "name", "other-number", "other-name", "number-as-text"],
    )
    def test_the_port_the_service_sends_to_is_preferred(self, target: int | str, expected: int) -> None:
        found = facts(service(ports=[{"port": 80, "targetPort": target}]))
        decision, result = run(pod(container(ports=PORTS), labels=WEB), facts=found)
        assert probe_port(result) == expected
        (readiness,) = [i for i in decision.injections if i.field == "readinessProbe"]
        assert "the port the Service sends to" in readiness.source

    def test_a_service_for_metrics_scraping_does_not_move_the_probe_to_the_metrics_port(self) -> None:
        found = facts(service("web-metrics", selector=WEB, ports=[{"port": 9090, "targetPort": "metrics"}]))
        _, result = run(pod(container(ports=PORTS), labels=WEB), facts=found)
        assert probe_port(result) == 9000  # the first port not named like a side port, as without Services

    def test_without_services_the_choice_is_as_before(self) -> None:
        _, result = run(pod(container(ports=PORTS), labels=WEB), facts=facts())
        assert probe_port(result) == 9000


class TestAReadinessProbeOnAnotherPort:
    def existing(self, port: int | str) -> dict[str, Any]:
        return container(ports=PORTS, readinessProbe={"tcpSocket": {"port": port}, "periodSeconds": 5})

    def test_is_named_in_the_annotation(self) -> None:
        decision, result = run(
            pod(self.existing(9090), labels=WEB), facts=facts(service(kind="LoadBalancer"))
        )
        note = "app: readinessProbe checks :9090, but Service web sends to :8080: may be ready too early"
        assert [str(found) for found in decision.notes] == [note]
        assert note.removeprefix("app: ") in result["metadata"]["annotations"]["pod-tailor.io/injected"]

    @pytest.mark.parametrize("port", [8080, "web"])
    def test_on_the_served_port_there_is_nothing_to_say(self, port: int | str) -> None:
        decision, _ = run(pod(self.existing(port), labels=WEB), facts=facts(service()))
        assert not decision.notes

    def test_a_sidecar_the_service_does_not_send_to_is_not_judged(self) -> None:
        sidecar = container(
            "proxy",
            ports=({"containerPort": 15090, "protocol": "TCP"},),
            readinessProbe={"httpGet": {"path": "/ready", "port": 15021}},
        )
        decision, _ = run(pod(container(ports=PORTS), sidecar, labels=WEB), facts=facts(service()))
        assert not decision.notes


class TestWhatPodTailorCannotRead:
    @pytest.mark.parametrize(
        "broken",
        [
            {"spec": {"selector": {"app": 5}}},
            {"spec": {"selector": "app=web"}},
            {"spec": "nope"},
            {
                "metadata": {
                    "name": "web",
                    "annotations": {"pod-tailor.io/prestop-sleep-seconds": "forever"},
                },
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": {"x": 1}}]},
            },
            {
                "metadata": {"name": "web", "annotations": {"cloud.google.com/neg": "{not json"}},
                "spec": {"selector": {"app": "web"}, "ports": "80"},
            },
        ],
    )
    def test_a_service_it_cannot_read_is_left_out_or_read_in_part(self, broken: dict[str, Any]) -> None:
        obj = {"kind": "Service", "metadata": {"name": "web", "namespace": "shop"}, **broken}
        found, left_out = parse_service(obj)
        if found is None:
            assert left_out
        decision, _ = run(pod(labels=WEB), facts=facts(obj))
        assert [i for i in decision.injections if i.field == "preStop"]

    @settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
    @given(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda inner: (
                st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
            ),
            max_leaves=20,
        )
    )
    def test_no_object_shape_makes_the_parsers_raise(self, junk: Any) -> None:
        for shape in (
            junk,
            {"metadata": {"name": "x"}, "spec": junk},
            {"metadata": {"name": "x", "annotations": junk}, "spec": {"rules": junk, "selector": junk}},
        ):
            if isinstance(shape, dict):
                parse_service(shape)
                parse_ingress(shape, {})
                parse_route(shape, namespace="shop")
                traffic_index(
                    {"services": [shape], "ingresses": [shape], "httproutes": [shape]}, ParseCache()
                )


class TestTheVerdictCache:
    def test_replicas_that_differ_in_a_label_a_selector_reads_get_their_own_decisions(self) -> None:
        traffic = traffic_index(
            {
                "services": [
                    service(kind="LoadBalancer", selector={"app": "web", "edge": "yes"}),
                    service("internal", selector={"app": "web"}),
                ]
            },
            ParseCache(),
        )
        cluster = ClusterSnapshot(
            policies=bundled_policies(),
            server_version=(1, 33),
            traffic=traffic,
            label_keys={"shop": frozenset({"app", "edge", "pod-template-hash"})},
        )
        cache = VerdictCache(16)
        answers: dict[int, str] = {}
        for edge in ("yes", "no", "yes"):
            review = admission_review(
                pod(labels={"app": "web", "edge": edge, "unread": str(len(answers))}),
                uid=f"u-{edge}-{len(answers)}", namespace="shop",
            )
            answer = admit(
                orjson.dumps(review), cluster=cluster, profiles=EMPTY_PROFILES, engine=decide, cache=cache
            )
            answers[len(answers)] = orjson.loads(answer.body)["response"]["patch"]
        assert (cache.misses, cache.hits) == (2, 1)
        assert answers[0] == answers[2] != answers[1]

    def test_the_label_keys_read_are_the_selectors_keys(self) -> None:
        found = facts(service(selector={"app": "web", "tier": "front"}), route())
        assert found.traffic is not None
        assert found.traffic.label_keys == {"app", "tier"}
        _, decision = decide(
            pod(labels=WEB),
            namespace="shop",
            profiles=EMPTY_PROFILES,
            cluster=ClusterSnapshot(policies=bundled_policies()),
        )
        assert decision.injections  # an unwatched cluster still decides, with the default pause


def test_an_ingress_to_a_service_elsewhere_is_no_path_here() -> None:
    decision, _ = run(pod(labels=WEB), facts=facts(service(), ingress(namespace="other")))
    (pause,) = [i for i in decision.injections if i.field == "preStop"]
    assert "Ingress" not in pause.source
