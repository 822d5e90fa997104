"""Snapshot ages as the metrics report them."""

from __future__ import annotations

import math

from webhook.core.snapshot import ProfileSnapshot
from webhook.refreshers.state import State


def test_profiles_never_built_are_infinitely_old_so_an_age_alert_fires() -> None:
    assert math.isinf(State().ages(now=1000.0)["profiles"])


def test_embedded_cluster_defaults_never_go_stale() -> None:
    assert State().ages(now=1000.0)["cluster"] == 0.0


def test_a_swapped_snapshot_ages_from_when_it_was_taken() -> None:
    state = State()
    state.swap_profiles(ProfileSnapshot(profiles={}, taken_at=900.0, source="file"))
    assert state.ages(now=1000.0)["profiles"] == 100.0
