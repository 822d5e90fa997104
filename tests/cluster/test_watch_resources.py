"""One collection's list+watch (`Watched`) for resources pod-tailor reads in part or that may be absent."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubefake import FakeKube
from kubernetes import client, config

from webhook.cluster.resources import custom_list
from webhook.cluster.watch import Watched
from webhook.config.settings import Settings

from .helpers import wait_until

VPA_PREFIX = "/apis/autoscaling.k8s.io/v1"


def vpa(name: str, mode: str = "Auto") -> dict[str, object]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                 "updatePolicy": {"updateMode": mode}},
    }  # fmt: skip


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


class Watches:
    """Starts `Watched` collections of VerticalPodAutoscalers in threads; stops them all at the end."""

    def __init__(self, api: object) -> None:
        self.api = api
        self.stop = threading.Event()
        self.running: list[tuple[Watched, threading.Thread]] = []

    def start(self, *, optional: bool, retry: float = 0.2, on_change: Callable[[], None] = lambda: None
              ) -> Watched:
        watched = Watched(
            "verticalpodautoscalers",
            custom_list("autoscaling.k8s.io", "v1", "verticalpodautoscalers")(self.api, Settings()),
            on_change=on_change,
            stop=self.stop,
            optional=optional,
            absent_retry=retry,
        )
        thread = threading.Thread(target=watched.run, daemon=True)
        thread.start()
        self.running.append((watched, thread))
        return watched

    def close(self) -> None:
        self.stop.set()
        for watched, thread in self.running:
            watched.close()
            thread.join(5)


@pytest.fixture
def watches(kubeconfig: Path) -> Iterator[Watches]:
    configuration = client.Configuration()
    config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig), client_configuration=configuration
    )
    runner = Watches(client.ApiClient(configuration))
    yield runner
    runner.close()


class TestAResourceThatIsNotServed:
    def test_an_optional_resource_without_its_crd_counts_as_listed_and_empty(
        self, kube: FakeKube, watches: Watches
    ) -> None:
        watched = watches.start(optional=True, retry=30)
        wait_until(watched.synced.is_set, what="the 404 to count as a list")
        assert not watched.served
        assert watched.objects() == []

    def test_a_crd_installed_later_is_picked_up_on_the_next_try(
        self, kube: FakeKube, watches: Watches
    ) -> None:
        watched = watches.start(optional=True, retry=0.2)
        wait_until(watched.synced.is_set, what="first try")
        kube.register(VPA_PREFIX, "verticalpodautoscalers", "VerticalPodAutoscaler")
        kube.put(vpa("web"))
        wait_until(lambda: watched.served and len(watched.objects()) == 1, what="the CRD to be picked up")
        kube.wait_for_watches(1, plural="verticalpodautoscalers")
        kube.put(vpa("api"))
        wait_until(lambda: len(watched.objects()) == 2, what="a watch event after the late list")

    def test_a_required_resource_that_is_not_served_keeps_retrying_and_never_counts_as_listed(
        self, kube: FakeKube, watches: Watches
    ) -> None:
        watched = watches.start(optional=False)
        wait_until(lambda: len(kube.requests_to("/verticalpodautoscalers")) >= 2, what="a retried list")
        assert not watched.synced.is_set()
        assert "404" in (watched.last_error or "")


class TestWhatCountsAsAChange:
    @pytest.fixture
    def served(self, kube: FakeKube) -> FakeKube:
        kube.register(VPA_PREFIX, "verticalpodautoscalers", "VerticalPodAutoscaler")
        return kube

    def test_a_status_only_update_is_stored_without_a_rebuild(
        self, served: FakeKube, watches: Watches
    ) -> None:
        served.put(vpa("web"))
        changes = Counter()
        watched = watches.start(optional=True, on_change=changes)
        served.wait_for_watches(1, plural="verticalpodautoscalers")
        after_list = changes.calls
        with_status = vpa("web") | {"status": {"recommendation": {"containerRecommendations": []}}}
        stored = served.put(with_status)
        wait_until(lambda: watched.resource_version == stored["metadata"]["resourceVersion"], what="event")
        assert changes.calls == after_list
        assert watched.objects()[0]["status"] == with_status["status"]  # kept, for whoever reads it

    def test_a_spec_change_rebuilds(
        self, served: FakeKube, watches: Watches
    ) -> None:
        served.put(vpa("web"))
        changes = Counter()
        watches.start(optional=True, on_change=changes)
        served.wait_for_watches(1, plural="verticalpodautoscalers")
        after_list = changes.calls
        served.put(vpa("web", mode="Off"))
        wait_until(lambda: changes.calls == after_list + 1, what="a rebuild for the spec change")

    def test_a_delete_rebuilds(
        self, served: FakeKube, watches: Watches
    ) -> None:
        served.put(vpa("web"))
        changes = Counter()
        watches.start(optional=True, on_change=changes)
        served.wait_for_watches(1, plural="verticalpodautoscalers")
        after_list = changes.calls
        served.delete("verticalpodautoscalers", "web", namespace="shop")
        wait_until(lambda: changes.calls == after_list + 1, what="a rebuild for the delete")


class TestStopping:
    """A stop must end the API server's watch at once, whenever it lands (the refresher's shutdown race)."""

    @pytest.fixture
    def api(self, kubeconfig: Path) -> client.ApiClient:
        configuration = client.Configuration()
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig), client_configuration=configuration
        )
        return client.ApiClient(configuration)

    def test_a_stop_while_the_watch_request_is_on_its_way_closes_that_watch(
        self, kube: FakeKube, api: client.ApiClient
    ) -> None:
        """The stop lands after the list, before the watch's stream is known to `close()`.

        Kills: giving the unread stream back to the connection pool (`release_conn()` without
        `close()`), which kept the API server's watch open until its timeout (300 s by default).
        """
        stop = threading.Event()
        core = client.CoreV1Api(api)

        def list_call(**options: Any) -> object:
            response = core.list_namespace(**options)
            if options.get("watch"):
                stop.set()  # as ClusterRefresher.stop() does, while this thread waits for the answer
                watched.close()
            return response

        watched = Watched("namespaces", list_call, on_change=lambda: None, stop=stop)
        thread = threading.Thread(target=watched.run, daemon=True)
        thread.start()
        thread.join(10)
        assert not thread.is_alive()
        wait_until(lambda: kube.open_watches() == 0, timeout=5, what="the abandoned watch to close")
