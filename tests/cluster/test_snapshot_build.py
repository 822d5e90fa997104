"""build_snapshot: the same snapshot with or without the parse cache, and no stale entries."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from webhook.cluster.snapshot import ParseCache, build_snapshot
from webhook.config.policies import bundled_policies
from webhook.config.settings import Settings


def limit_range(namespace: str, name: str, version: int, cpu_max: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": str(version)},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": str(cpu_max)}}]},
    }


def build(limit_ranges: list[dict[str, Any]], parsed: ParseCache | None) -> Any:
    namespaces = [{"metadata": {"name": "a", "labels": {"pod-tailor.io/mode": "enforce"}}}]
    return build_snapshot(
        policies=bundled_policies(),
        settings=Settings(),
        objects={"namespaces": namespaces, "limitranges": limit_ranges},
        server_version=(1, 30),
        taken_at=1.0,
        source="test",
        cache=parsed,
    )


updates = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]), st.sampled_from(["x", "y", "z"]), st.integers(1, 64), st.booleans()
    ),
    max_size=30,
)


@given(updates)
def test_a_cached_rebuild_equals_a_fresh_one_after_any_sequence_of_changes(
    changes: list[tuple[str, str, int, bool]],
) -> None:
    current: dict[tuple[str, str], dict[str, Any]] = {}
    parsed = ParseCache()
    for version, (namespace, name, cpu_max, delete) in enumerate(changes, start=1):
        if delete:
            current.pop((namespace, name), None)
        else:
            current[(namespace, name)] = limit_range(namespace, name, version, cpu_max)
        cached, fresh = build(list(current.values()), parsed), build(list(current.values()), None)
        assert cached.limit_ranges == fresh.limit_ranges
        assert len(parsed) == len(current)  # deleted and replaced versions are dropped


def test_several_limit_ranges_in_a_namespace_add_up_in_name_order() -> None:
    snapshot = build([limit_range("a", "second", 2, 2), limit_range("a", "first", 1, 1)], None)
    assert [item.max["cpu"] for item in snapshot.limit_ranges["a"]] == [Decimal(1), Decimal(2)]
    assert snapshot.settings_for("a").mode.value == "enforce"
    assert snapshot.default_mode == Settings().default_mode
