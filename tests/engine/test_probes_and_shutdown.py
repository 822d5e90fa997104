"""Probes, the preStop sleep and the grace period, for serving containers of long-running Pods."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.engine.podkit import container, first, pod, policy, run
from tests.engine.test_resources import recommendation
from webhook.core.facts import ClusterFacts
from webhook.core.model.decision import POD_TARGET
from webhook.core.model.patch import PatchBuilder
from webhook.core.model.pod import INJECTED_ANNOTATION, PROBE_PATH_ANNOTATION, ContainerRef
from webhook.core.policy.policies import Policy
from webhook.core.serving.probes import probe_container
from webhook.core.serving.shutdown import (
    existing_sleep,
    grace_period,
    grace_set_by_person,
    is_windows,
    pre_stop,
)

LIVE = policy("probes:\n  liveness: {enabled: true}", name="live")

TCP_8080 = {"tcpSocket": {"port": 8080}}
METRICS = {"containerPort": 9090, "name": "metrics"}


def ref_of(body: dict[str, Any]) -> ContainerRef:
    return ContainerRef("containers", 0, body, body["name"])


def probed(
    body: dict[str, Any], *, using: Policy = LIVE, targeted: frozenset[int | str] = frozenset(),
    served: int | None = None, path: str | None = None,
) -> tuple[list[Any], dict[str, Any]]:
    """`probe_container` asked directly: its injections, and the probes its patch sets by field."""
    patch = PatchBuilder(pod(body))
    injections = probe_container(ref_of(body), policy=using, path_annotation=path, profile=None, patch=patch,
                                 targeted=targeted, served=served)
    return injections, {op["path"].rsplit("/", 1)[1]: op["value"] for op in patch.ops}


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
            pytest.param(pod(container(), annotations={PROBE_PATH_ANNOTATION: "/healthz"}),
                         policy(name="default"), "readinessProbe",
                         "http :8080/healthz every 5s x3 (budget 15s)",
                         'path from pod annotation, policy "default"',
                         id="http-path-from-the-annotation"),  # the annotation's source text changed or lost
            pytest.param(pod(container()), policy("probes: {httpPath: /ready}", name="ready"),
                         "readinessProbe", "http :8080/ready every 5s x3 (budget 15s)",
                         'path from policy "ready", policy "ready"',
                         id="http-path-from-the-policy"),  # `or True`: the annotation named instead
            pytest.param(pod(container(ports=(8080, METRICS))), policy(name="default"), "readinessProbe",
                         "tcp :8080 every 5s x3 (budget 15s)",
                         'serving port (not metrics :9090), policy "default"',
                         id="a-side-port-passed-over-is-named"),  # `=` for `+=`: the reason lost
            pytest.param(pod(container(ports=(8080, METRICS)),
                             annotations={PROBE_PATH_ANNOTATION: "/healthz"}),
                         policy(name="default"), "readinessProbe",
                         "http :8080/healthz every 5s x3 (budget 15s)",
                         'path from pod annotation (not metrics :9090), policy "default"',
                         id="a-side-port-passed-over-by-an-http-probe"),  # "http" misspelt in the prefixes
            pytest.param(pod(container(ports=(METRICS,))), policy(name="default"), "readinessProbe",
                         "tcp :9090 every 5s x3 (budget 15s)", 'serving port, policy "default"',
                         id="only-a-side-port-is-not-passed-over"),  # the probed port's number not compared
            pytest.param(
                pod(container(ports=(8080, METRICS, {"containerPort": 9091, "name": "admin"},
                                      {"containerPort": 9092, "name": "debug"},
                                      {"containerPort": 9093, "name": "pprof"}))),
                policy(name="default"), "readinessProbe", "tcp :8080 every 5s x3 (budget 15s)",
                'serving port (not metrics :9090, admin :9091, debug :9092), policy "default"',
                id="at-most-three-side-ports-are-named"),  # `[:4]`, or another separator
            pytest.param(pod(container()), LIVE, "startupProbe", "tcp :8080 every 5s x60 (budget 300s)",
                         'serving port, policy "live"', id="start-up-budget-default"),
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


class TestTheStartUpBudget:
    @pytest.mark.parametrize(
        ("startup_seconds", "value", "note"),
        [
            pytest.param(150, "tcp :8080 every 5s x60 (budget 300s)", "",
                         id="twice-the-start-up-is-the-policys-budget"),  # `>=` for `>`: a note for no change
            pytest.param(400, "tcp :8080 every 5s x160 (budget 800s)", "; budget 2 x observed start-up 400s",
                         id="twice-the-start-up-beyond-the-policys-budget"),  # `*` for `/`, 3 x, no note
        ],
    )
    def test_the_startup_probe_waits_twice_the_observed_start_up_and_says_so(
        self, startup_seconds: int, value: str, note: str
    ) -> None:
        """The default startup probe (every 5 s x 60) widened to twice an observed start-up only when that
        exceeds it. Kills: `2 * seconds * period`, `3 *`, `needed >= threshold`, the budget note as None."""
        profile = recommendation(startup_cpu=Decimal(2), startup_seconds=startup_seconds)
        decision, _ = run(pod(container()), profiles={"app": profile}, using=LIVE)
        [injection] = [i for i in decision.injections if i.field == "startupProbe"]
        assert (injection.target, injection.value, injection.source) == (
            "app", value, f'serving port, policy "live"{note}'
        )


class TestWhichPortIsProbed:
    @pytest.mark.parametrize(
        ("ports", "targeted", "served", "port"),
        [
            pytest.param(({"containerPort": 8080, "name": "http"}, 9000), frozenset({9000}), None, 9000,
                         id="the-port-a-service-sends-to-before-one-named-http"),  # `targeted` not passed
            pytest.param((), frozenset(), 8080, 8080,
                         id="an-undeclared-port-a-service-sends-to"),  # the served port dropped or misread
            pytest.param((9000,), frozenset(), 8080, 9000,
                         id="a-declared-port-before-an-undeclared-one"),  # `or` for `and`, `is not None`
            pytest.param((), frozenset(), None, None,
                         id="no-port-at-all-no-probe"),  # `served is None`: a probe on port None
        ],
    )
    def test_the_probe_checks_the_port_traffic_comes_to(
        self, ports: tuple[Any, ...], targeted: frozenset[int | str], served: int | None, port: int | None
    ) -> None:
        """Kills the mutants of `probe_container`'s port choice: `serving_port` without the Services' ports,
        `port is None or served ...`, `port is not None and ...`, `served is None`, and the served port
        stored as None or under a misspelt key."""
        injections, probes = probed(container(ports=ports), targeted=targeted, served=served)
        if port is None:
            assert (injections, probes) == ([], {})
        else:
            assert probes["readinessProbe"]["tcpSocket"] == {"port": port}
            assert [i.target for i in injections] == ["app"] * 3

    @pytest.mark.parametrize(
        ("ports", "targeted", "source"),
        [
            pytest.param((8080,), frozenset({8080}), "the port the Service sends to", id="by-number"),
            pytest.param(({"containerPort": 8080, "name": "web"},), frozenset({"web"}),
                         "the port the Service sends to", id="by-name"),  # the name misread, `and` for `or`
            pytest.param((8080, METRICS), frozenset({8080}),
                         "the port the Service sends to (not metrics :9090)", id="beside-a-side-port"),
            pytest.param((8080,), frozenset({9000}), "serving port", id="another-port-targeted"),
        ],
    )
    def test_a_tcp_probe_on_the_port_a_service_sends_to_says_so(
        self, ports: tuple[Any, ...], targeted: frozenset[int | str], source: str
    ) -> None:
        """Kills: whether the Service sends to the port judged as None, with `and`, or from a misspelt
        `name`; and the text that says so changed."""
        injections, _ = probed(container(ports=ports), targeted=targeted, using=policy(name="default"))
        [readiness] = injections
        assert readiness.source == f'{source}, policy "default"'


class TestWhoseGracePeriodItIs:
    @pytest.mark.parametrize(
        ("grace", "personal"),
        [(45, 45), (0, 0), (30, None), (None, None), (True, None), ("45", None), (45.0, None)],
    )
    def test_only_an_integer_other_than_the_default_is_a_persons_grace_period(
        self, grace: object, personal: int | None
    ) -> None:
        """A malformed value (the webhook sees the Pod before validation) is nobody's choice. Kills `and` for
        the first `or` in the type test (a bool or a string read as a person's grace period)."""
        subject = pod(container(), grace=None)
        if grace is not None:
            subject["spec"]["terminationGracePeriodSeconds"] = grace
        assert grace_set_by_person(subject) == personal


class TestWhichPodsRunOnWindows:
    @pytest.mark.parametrize(
        ("spec", "windows"),
        [
            pytest.param({"os": {"name": "windows"}}, True, id="spec-os-windows"),
            pytest.param({"os": {"name": "linux"}}, False, id="spec-os-linux"),
            pytest.param({"os": "windows"}, False, id="spec-os-not-an-object"),  # the type test `or True`
            pytest.param({"nodeSelector": {"kubernetes.io/os": "windows"}}, True, id="node-selector"),
            pytest.param({}, False, id="neither"),
        ],
    )
    def test_a_pod_runs_on_windows_by_its_os_or_its_node_selector(
        self, spec: dict[str, Any], windows: bool
    ) -> None:
        """Kills the mutants of `is_windows` that misread `spec.os.name` (the key, the value, the `or {}`,
        the type test)."""
        assert is_windows(pod(container(), **spec)) is windows


class TestWhatAPreStopSleepSays:
    @pytest.mark.parametrize(
        ("facts", "using", "pause", "source"),
        [
            pytest.param(ClusterFacts(server_version=(1, 30)), policy(name="default"), None,
                         'native sleep, cluster 1.30, policy "default"', id="native"),
            pytest.param(ClusterFacts(server_version=(1, 29)), policy(name="default"), None,
                         'exec /bin/sleep (no native sleep before 1.30), cluster 1.29, policy "default"',
                         id="exec"),
            pytest.param(ClusterFacts(), policy(name="default"), None,
                         'native sleep, cluster version unknown, so native, policy "default"',
                         id="version-unknown"),
            pytest.param(ClusterFacts(server_version=(1, 33)), policy(name="default"), (20, "behind an ALB"),
                         'behind an ALB; native sleep, cluster 1.33, policy "default"',
                         id="sized-from-the-path"),
        ],
    )
    def test_the_sleep_says_how_it_sleeps_on_which_cluster_under_which_policy(
        self, facts: ClusterFacts, using: Policy, pause: tuple[int, str] | None, source: str
    ) -> None:
        """Kills: a path text invented when none was given, `fitted` as None or text when nothing was
        shortened, the version text as None, the exec text changed, and the injection's target as None."""
        body = container()
        injection, seconds, warning = pre_stop(
            ref_of(body), policy=using, server_version=facts.server_version, windows=False, grace=None,
            patch=PatchBuilder(pod(body)),
            pause=pause,
        )
        assert injection is not None
        assert (injection.target, injection.field, injection.source) == ("app", "preStop", source)
        assert warning is None
        assert seconds == (pause[0] if pause else 5)

    @pytest.mark.parametrize(
        ("grace", "seconds", "fitted"),
        [
            pytest.param(12, 5, "", id="a-grace-over-twice-the-sleep"),  # `seconds * 3 > grace`
            pytest.param(10, 5, "", id="a-grace-of-exactly-twice-the-sleep"),  # `>=` for `>`
            pytest.param(9, 4, "; shortened to half the Pod's grace period of 9s", id="a-grace-under-twice"),
            pytest.param(2, 1, "; shortened to half the Pod's grace period of 2s",
                         id="a-grace-of-2s"),  # `grace <= 2`, `grace < 3`
        ],
    )
    def test_a_persons_grace_period_keeps_the_sleep_to_half_of_it(
        self, grace: int, seconds: int, fitted: str
    ) -> None:
        """Kills the boundary mutants of the fit to a person's grace period (`* 3`, `>=`, `grace <= 2`,
        `grace < 3`)."""
        body = container()
        injection, slept, warning = pre_stop(
            ref_of(body), policy=policy(name="default"), server_version=(1, 30),
            windows=False, grace=grace, patch=PatchBuilder(pod(body)),
        )
        assert injection is not None
        assert (injection.value, slept, warning) == (f"sleep {seconds}s", seconds, None)
        assert injection.source == f'native sleep, cluster 1.30, policy "default"{fitted}'

    @pytest.mark.parametrize(
        ("body", "facts", "using", "windows", "grace", "warning"),
        [
            pytest.param(container(lifecycle={"preStop": {"httpGet": {"path": "/drain", "port": 8080}}}),
                         ClusterFacts(server_version=(1, 30)), policy(), False, None, None,
                         id="a-hook-of-its-own"),
            pytest.param(container(), ClusterFacts(server_version=(1, 30)), policy(), False, 1,
                         "app: no preStop sleep: the Pod's grace period is 1s", id="a-grace-period-of-1s"),
            pytest.param(container(), ClusterFacts(), policy("preStop: {whenVersionUnknown: skip}"), False,
                         None, None, id="version-unknown-and-skip"),
            pytest.param(container(), ClusterFacts(server_version=(1, 29)), policy(), True, None,
                         "app: no preStop sleep: cluster lacks native sleep and Windows node", id="windows"),
            pytest.param(container(), ClusterFacts(server_version=(1, 29)),
                         policy("preStop: {allowExec: false}", name="no-exec"), False, None,
                         "app: no preStop sleep: cluster lacks native sleep and"
                         ' policy "no-exec" forbids exec',
                         id="exec-forbidden"),
        ],
    )
    def test_no_sleep_is_zero_seconds_slept_with_the_reason(
        self, body: dict[str, Any], facts: ClusterFacts, using: Policy, windows: bool, grace: int | None,
        warning: str | None,
    ) -> None:
        """`pre_stop` returns the seconds it slept: 0 when it adds no sleep (kills each `return None, 1,
        ...`), and the reason word for word (kills `"Windows node" if windows or True`, its text changed)."""
        patch = PatchBuilder(pod(body))
        assert pre_stop(ref_of(body), policy=using, server_version=facts.server_version, windows=windows,
                        grace=grace, patch=patch) == (None, 0, warning)
        assert patch.ops == ()
