"""Probes, the preStop sleep and the grace period, for serving containers of long-running Pods."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.engine.podkit import container, first, pod, policy, run
from tests.engine.test_resources import recommendation
from webhook.core.decision import POD_TARGET
from webhook.core.facts import ClusterFacts
from webhook.core.patch import PatchBuilder
from webhook.core.pod import INJECTED_ANNOTATION, PROBE_PATH_ANNOTATION
from webhook.core.shutdown import existing_sleep, grace_period

LIVE = policy("probes:\n  liveness: {enabled: true}", name="live")

TCP_8080 = {"tcpSocket": {"port": 8080}}


class TestWhichContainersGetProbes:
    @pytest.mark.parametrize(
        ("subject", "probed"),
        [
            pytest.param(pod(container()), True, id="deployment pod with a port"),
            pytest.param(pod(container(ports=())), False, id="no ports"),
            pytest.param(
                pod(container(ports=({"containerPort": 53, "protocol": "UDP"},))), False, id="udp only"
            ),
            pytest.param(pod(container(), restart="Never", owner=("Job", "migrate")), False, id="job pod"),
            pytest.param(
                pod(container(), restart="OnFailure", owner=("Job", "nightly-29012345")), False, id="cronjob"
            ),
            pytest.param(pod(container(), hostNetwork=True), True, id="hostNetwork pod"),
            pytest.param(pod(container(), owner=None), True, id="bare pod"),
        ],
    )
    def test_only_serving_containers_of_long_running_pods_get_probes_and_a_pre_stop_sleep(
        self, subject: dict[str, Any], probed: bool
    ) -> None:
        _, result = run(subject)
        body = first(result)
        assert ("readinessProbe" in body) is probed
        assert ("lifecycle" in body) is probed

    def test_init_containers_and_native_sidecars_get_no_probes(self) -> None:
        sidecar = container("proxy", ports=(15001,), restartPolicy="Always")
        _, result = run(pod(container(), init=[sidecar]))
        assert "readinessProbe" not in first(result, "initContainers")
        assert "lifecycle" not in first(result, "initContainers")


class TestProbeShape:
    @pytest.mark.parametrize(
        ("ports", "expected_port"),
        [
            ((9090, {"containerPort": 8080, "name": "http", "protocol": "TCP"}), 8080),
            (
                (
                    {"containerPort": 9090, "name": "metrics", "protocol": "TCP"},
                    {"containerPort": 8443, "name": "http-tls"},
                ),
                8443,
            ),
            (({"containerPort": 53, "protocol": "UDP"}, 5432), 5432),
        ],
    )
    def test_the_probe_targets_a_port_named_http_else_the_first_tcp_port(
        self, ports: tuple[Any, ...], expected_port: int
    ) -> None:
        _, result = run(pod(container(ports=ports)))
        assert first(result)["readinessProbe"]["tcpSocket"] == {"port": expected_port}

    def test_readiness_is_added_and_liveness_only_when_the_policy_enables_it(self) -> None:
        _, plain = run(pod(container()))
        _, live = run(pod(container()), using=LIVE)
        assert "readinessProbe" in first(plain)
        assert "livenessProbe" not in first(plain)
        assert first(live)["livenessProbe"]["successThreshold"] == 1
        assert first(live)["startupProbe"]["successThreshold"] == 1

    @pytest.mark.parametrize(
        ("subject", "using", "startup"),
        [
            pytest.param(pod(container()), None, False, id="no liveness anywhere: no startup probe"),
            pytest.param(pod(container()), "live", True, id="the policy's liveness: startup beside it"),
            pytest.param(
                pod(container(livenessProbe={"tcpSocket": {"port": 8080}, "periodSeconds": 10})), None, True,
                id="the author's liveness: startup beside it",
            ),
            pytest.param(
                pod(container(readinessProbe={"httpGet": {"path": "/ready", "port": 8080}})), None, False,
                id="the author's readiness only: no startup probe",
            ),
        ],
    )
    def test_a_startup_probe_is_added_only_beside_a_liveness_probe(
        self, subject: dict[str, Any], using: str | None, startup: bool
    ) -> None:
        """A startup probe holds liveness back; with no liveness it would only add a kill after 300 s."""
        _, result = run(subject, using=LIVE if using else policy())
        assert ("startupProbe" in first(result)) is startup

    def test_a_probe_path_from_the_pod_annotation_makes_http_probes(self) -> None:
        _, result = run(pod(container(), annotations={PROBE_PATH_ANNOTATION: "/healthz"}))
        assert first(result)["readinessProbe"]["httpGet"] == {
            "path": "/healthz",
            "port": 8080,
            "scheme": "HTTP",
        }

    def test_a_probe_path_from_the_policy_makes_http_probes(self) -> None:
        _, result = run(pod(container()), using=policy("probes: {httpPath: /ready}"))
        assert first(result)["readinessProbe"]["httpGet"]["path"] == "/ready"

    def test_an_existing_probe_is_kept_and_its_check_reused_for_the_missing_ones(self) -> None:
        liveness = {
            "exec": {"command": ["/bin/health"]},
            "periodSeconds": 20,
            "timeoutSeconds": 1,
            "successThreshold": 1,
            "failureThreshold": 3,
        }
        _, result = run(pod(container(livenessProbe=liveness)))
        body = first(result)
        assert body["livenessProbe"] == liveness
        assert body["readinessProbe"]["exec"] == {"command": ["/bin/health"]}
        assert (
            "same check as the container's livenessProbe"
            in result["metadata"]["annotations"][INJECTED_ANNOTATION]
        )

    def test_the_startup_budget_covers_twice_the_observed_start_up(self) -> None:
        profile = recommendation(startup_cpu=Decimal(2), startup_seconds=400)
        _, result = run(pod(container()), profiles={"app": profile}, using=LIVE)
        startup = first(result)["startupProbe"]
        assert startup["periodSeconds"] * startup["failureThreshold"] >= 800


class TestPreStopSleep:
    @pytest.mark.parametrize(
        ("facts", "policy_text", "expected"),
        [
            (ClusterFacts(server_version=(1, 30)), "", {"sleep": {"seconds": 5}}),
            (ClusterFacts(server_version=(1, 29)), "", {"exec": {"command": ["/bin/sleep", "5"]}}),
            (ClusterFacts(), "", {"sleep": {"seconds": 5}}),
            (
                ClusterFacts(),
                "preStop: {whenVersionUnknown: exec}",
                {"exec": {"command": ["/bin/sleep", "5"]}},
            ),
            (ClusterFacts(), "preStop: {whenVersionUnknown: skip}", None),
            (ClusterFacts(server_version=(1, 28)), "preStop: {allowExec: false}", None),
        ],
    )
    def test_the_sleep_is_native_from_1_30_else_an_exec_sleep_if_allowed(
        self, facts: ClusterFacts, policy_text: str, expected: dict[str, Any] | None
    ) -> None:
        _, result = run(pod(container()), using=policy(policy_text), facts=facts)
        assert first(result).get("lifecycle", {}).get("preStop") == expected

    def test_windows_pods_get_no_exec_sleep(self) -> None:
        subject = pod(container(), nodeSelector={"kubernetes.io/os": "windows"})
        decision, result = run(subject, facts=ClusterFacts(server_version=(1, 29)))
        assert "lifecycle" not in first(result)
        assert any("Windows" in warning for warning in decision.warnings)

    def test_an_existing_pre_stop_hook_is_kept(self) -> None:
        hook = {"preStop": {"httpGet": {"path": "/drain", "port": 8080}}}
        _, result = run(pod(container(lifecycle=dict(hook))))
        assert first(result)["lifecycle"] == hook

    def test_other_lifecycle_hooks_stay_beside_the_new_pre_stop(self) -> None:
        post_start = {"exec": {"command": ["/warm"]}}
        _, result = run(pod(container(lifecycle={"postStart": post_start})))
        assert first(result)["lifecycle"] == {"postStart": post_start, "preStop": {"sleep": {"seconds": 5}}}


class TestHowAProbeIsExplained:
    @pytest.mark.parametrize(
        ("subject", "using", "field", "value", "source"),
        [
            pytest.param(pod(container(readinessProbe={"httpGet": {"path": "/healthz", "port": 8080}})), LIVE,
                         "livenessProbe", "httpGet as in readinessProbe every 10s x3 (budget 30s)",
                         'same check as the container\'s readinessProbe, policy "live"',
                         id="a-reused-check-names-its-handler"),  # `kind = None`: "None as in"
            pytest.param(pod(container()), policy(name="default"), "readinessProbe",
                         "tcp :8080 every 5s x3 (budget 15s)", 'serving port, policy "default"',
                         id="tcp-on-the-serving-port"),  # "serving port" changed
        ],
    )
    def test_each_new_probe_says_what_it_checks_and_why(
        self, subject: dict[str, Any], using: Any, field: str, value: str, source: str
    ) -> None:
        """The annotation's explanation of a probe, word for word (kills the mutants of probes.py's
        `_handler` that change only what it reads as)."""
        decision, _ = run(subject, using=using)
        [injection] = [i for i in decision.injections if i.field == field]
        assert (injection.value, injection.source) == (value, source)


class TestGracePeriod:
    @pytest.mark.parametrize(
        ("grace", "expected"),
        [(30, 35), (None, 35), (120, 120), (10, 10)],
    )
    def test_the_default_grace_period_covers_sleep_plus_drain_and_a_persons_value_stays(
        self, grace: int | None, expected: int
    ) -> None:
        _, result = run(pod(container(), grace=grace))
        assert result["spec"]["terminationGracePeriodSeconds"] == expected

    def test_a_short_grace_period_set_by_a_person_shortens_the_sleep_to_half_of_it(self) -> None:
        decision, result = run(pod(container(), grace=6))
        assert first(result)["lifecycle"]["preStop"] == {"sleep": {"seconds": 3}}
        assert any("leaves 3s after the preStop sleep" in warning for warning in decision.warnings)

    def test_the_longest_existing_sleep_counts_toward_the_grace_period(self) -> None:
        sidecar = container(
            "envoy", ports=(9901,), lifecycle={"preStop": {"exec": {"command": ["sh", "-c", "sleep 20"]}}}
        )
        _, result = run(pod(container(), sidecar))
        assert result["spec"]["terminationGracePeriodSeconds"] == 50

    def test_no_grace_change_without_a_new_sleep(self) -> None:
        _, result = run(pod(container(ports=())))
        assert result["spec"]["terminationGracePeriodSeconds"] == 30

    @pytest.mark.parametrize(
        ("drain", "grace", "expected", "warned"),
        [
            pytest.param(25, None, 30, False, id="sleep-and-drain-exactly-the-default"),  # `<` for `<=`
            pytest.param(30, 35, 35, False, id="a-persons-value-exactly-enough"),  # `>` for `>=`
            pytest.param(30, 34, 34, True, id="a-persons-value-a-second-short"),
        ],
    )
    def test_the_grace_period_changes_only_when_sleep_plus_drain_exceeds_it(
        self, drain: int, grace: int | None, expected: int, warned: bool
    ) -> None:
        """Kills the boundary mutants of `grace_period`: a default of exactly sleep + drain rewritten
        (`needed < 30`), a person's value of exactly sleep + drain warned about (`personal > needed`)."""
        decision, result = run(pod(container(), grace=grace), using=policy(f"drainSeconds: {drain}"))
        assert result["spec"].get("terminationGracePeriodSeconds", 30) == expected
        assert any("after the preStop sleep" in warning for warning in decision.warnings) is warned
        fields = [injection.field for injection in decision.injections]
        assert ("terminationGracePeriodSeconds" in fields) is (grace is None and expected != 30)

    def test_a_raised_grace_period_is_explained_as_the_pods_with_only_the_parts_it_has(self) -> None:
        """Kills: the injection's target not `POD_TARGET`, and the `preStop 0s + ` part (or another
        text) written when no container sleeps (a class's own longer drain raises it without a pause)."""
        subject = pod(container(ports=()))
        patch = PatchBuilder(subject)
        slow = policy("drainSeconds: 45", name="slow")
        grace, warning = grace_period(subject, policy=slow, longest_sleep=0, patch=patch)
        assert warning is None
        assert grace is not None
        assert (grace.target, grace.value) == (POD_TARGET, "45")
        assert grace.source == 'was 30; drain 45s, policy "slow"'
        assert [op["path"] for op in patch.ops] == ["/spec/terminationGracePeriodSeconds"]


class TestExistingSleep:
    @pytest.mark.parametrize(
        ("pre_stop", "seconds"),
        [
            pytest.param({"sleep": {"seconds": 20}}, 20, id="native"),  # the `sleep` key read wrong
            pytest.param({"exec": {"command": ["sleep", "20"]}}, 20, id="exec-split-words"),  # joined wrong
            pytest.param({"exec": {"command": ["sh", "-c", "sleep 7 && nginx -s quit"]}}, 7, id="in-a-shell"),
            pytest.param({"exec": {"command": ["timeout", "5", "drain"]}}, None,
                         id="a-number-after-another-word"),  # `or` for `and` in the word test
            pytest.param({"exec": {"command": 5}}, None, id="command-not-a-list"),  # `or` for `and`
            pytest.param({"exec": ["sleep", "5"]}, None, id="exec-not-an-object"),  # the type test `or True`
            pytest.param({"httpGet": {"path": "/drain", "port": 80}}, None, id="http"),
        ],
    )
    def test_the_pause_of_a_pre_stop_hook_is_read_where_it_can_be(
        self, pre_stop: dict[str, Any], seconds: int | None
    ) -> None:
        """What the grace period counts of a hook a person wrote; a malformed one (mutating webhooks see
        the Pod before validation) reads as no pause rather than failing the decision."""
        assert existing_sleep({"name": "app", "lifecycle": {"preStop": pre_stop}}) == seconds
