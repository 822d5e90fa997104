"""The verdict cache's own bookkeeping, asked of `VerdictCache` directly: what it counts, what it keeps, what
it costs, and when it empties. Each test's docstring names the mutants of admission/cache.py it kills
(found by `bench/mutation.py --only webhook/admission/cache.py`); the server-level behaviour is in
test_contract.py, test_bounds.py and test_https.py."""

from __future__ import annotations

import gc
import weakref

import pytest

from webhook.admission.cache import MAX_ENTRY_INPUTS, VerdictCache, entry_cost
from webhook.admission.verdict import Outcome, Verdict
from webhook.config.policies import bundled_policies
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot

CLUSTER = ClusterSnapshot(policies=bundled_policies())
PROFILES = ProfileSnapshot()
VERDICT = Verdict(Outcome.PATCHED, patch="W10=", warnings=("a warning",))


def key_of(cache: VerdictCache, inputs: bytes, *, cluster: ClusterSnapshot = CLUSTER,
           profiles: ProfileSnapshot = PROFILES) -> tuple[str, bytes] | None:
    return cache.key("shop", inputs, cluster=cluster, profiles=profiles)


def stored(cache: VerdictCache, *names: bytes) -> None:
    for name in names:
        cache.put(key_of(cache, name), VERDICT)


class TestCounting:
    def test_a_miss_then_a_hit_are_counted_once_each_and_the_hit_is_the_stored_verdict(self) -> None:
        """Kills: counters starting at 1, `= 1` / `-= 1` / `+= 2` for `+= 1`, the entry moved to the newest
        place as None, and the answer taken from the entry's cost instead of its verdict."""
        cache = VerdictCache(8)
        key = key_of(cache, b"one")
        assert cache.get(key) is None
        cache.put(key, VERDICT)
        assert cache.get(key) is VERDICT
        assert cache.get(key) is VERDICT
        assert (cache.misses, cache.hits, cache.oversized) == (1, 2, 0)

    def test_no_key_means_no_lookup_and_nothing_stored(self) -> None:
        """Kills: `is not None` for `is None` in `get` and `put`."""
        cache = VerdictCache(8)
        cache.put(None, VERDICT)
        assert cache.get(None) is None
        assert (len(cache), cache.misses, cache.hits, cache.bytes) == (0, 0, 0, 0)


class TestWhatIsKept:
    def test_inputs_of_exactly_the_entry_limit_are_kept_and_one_byte_more_are_not(self) -> None:
        """Kills: `>=` for `>` against MAX_ENTRY_INPUTS, and the oversized count not adding one (`= 1`)."""
        cache = VerdictCache(8)
        assert key_of(cache, b"x" * MAX_ENTRY_INPUTS) is not None
        assert key_of(cache, b"x" * (MAX_ENTRY_INPUTS + 1)) is None
        assert key_of(cache, b"y" * (MAX_ENTRY_INPUTS + 1)) is None
        assert cache.oversized == 2

    def test_a_cache_of_one_entry_caches_and_a_cache_of_none_does_not(self) -> None:
        """Kills: `<= 1` and `<` for `<= 0` on the size and on the bytes, and `and` for `or` between them."""
        assert key_of(VerdictCache(1), b"one") is not None
        assert key_of(VerdictCache(8, max_bytes=1), b"one") is not None
        assert key_of(VerdictCache(0), b"one") is None
        assert key_of(VerdictCache(8, max_bytes=0), b"one") is None

    def test_an_entry_costing_exactly_the_byte_bound_is_kept_and_one_costing_more_is_not(self) -> None:
        """Kills: `>=` for `>` in `put`'s oversize check, and its count not adding one (`= 1` for `+= 1`:
        two entries too large are counted as two)."""
        cost = entry_cost(("shop", b"one"), VERDICT)
        exact, short = VerdictCache(8, max_bytes=cost), VerdictCache(8, max_bytes=cost - 1)
        stored(exact, b"one")
        stored(short, b"one", b"two")
        assert (len(exact), exact.oversized) == (1, 0)
        assert (len(short), short.oversized) == (0, 2)

    def test_the_count_bound_keeps_exactly_size_entries_the_least_recently_used_going_first(self) -> None:
        """Kills: `>` for `>=` against the size, `or` for `and` in the eviction loop, and the oldest
        entry popped by a wrong key."""
        cache = VerdictCache(2)
        stored(cache, b"a", b"b")
        assert cache.get(key_of(cache, b"a")) is VERDICT  # now the newest
        stored(cache, b"c")
        assert len(cache) == 2
        assert cache.get(key_of(cache, b"b")) is None
        assert cache.get(key_of(cache, b"a")) is VERDICT

    def test_the_byte_bound_keeps_entries_that_fill_it_exactly(self) -> None:
        """Kills: `>=` for `>` and `-` for `+` in the eviction loop's byte test, `and` for `or` between the
        two bounds."""
        cost = entry_cost(("shop", b"a"), VERDICT)
        cache = VerdictCache(100, max_bytes=2 * cost)
        stored(cache, b"a", b"b")
        assert len(cache) == 2
        stored(cache, b"c")
        assert len(cache) == 2
        assert cache.bytes == 2 * cost


class TestBytes:
    def test_an_entry_costs_its_key_three_times_its_answer_and_the_overhead(self) -> None:
        """The estimate the module promises (erring high). Kills each changed operator and constant in
        `entry_cost`."""
        key = ("shop", b"x" * 100)
        assert entry_cost(key, VERDICT) == 100 + 3 * len(VERDICT.tail) + 512

    def test_the_bytes_held_are_the_sum_of_the_entries_costs_through_replace_and_eviction(self) -> None:
        """Kills: `=`, `+=` or `[2]` for the `-= previous[1]` of a replaced entry, `=`/`+=` for the
        `-= freed` of an evicted one, `=`/`-=` for the `+= cost` of a new one, and the replaced entry not
        taken out first (`previous = None`, or popped by the key None: the cache, full, then evicts
        another). Keys of three sizes, so that no cost stands in for another."""
        small, middle, large = b"a", b"b" * 50, b"c" * 200
        costs = {name: entry_cost(("shop", name), VERDICT) for name in (small, middle, large)}
        cache = VerdictCache(2)
        stored(cache, small, middle)
        assert cache.bytes == costs[small] + costs[middle]
        stored(cache, middle)  # the same key again: replaced, not added, and nothing evicted
        assert (len(cache), cache.bytes) == (2, costs[small] + costs[middle])
        stored(cache, large)  # evicts the oldest: `small`
        assert (len(cache), cache.bytes) == (2, costs[middle] + costs[large])
        assert cache.get(key_of(cache, small)) is None
        assert cache.get(key_of(cache, middle)) is VERDICT


class TestSnapshots:
    def test_a_new_profile_snapshot_alone_empties_the_cache(self) -> None:
        """Kills: `and` for `or` between the two snapshot tests, and `is` for `is not` on the profiles."""
        cache = VerdictCache(8)
        stored(cache, b"one")
        key = key_of(cache, b"one", profiles=ProfileSnapshot(source="new"))
        assert (len(cache), cache.bytes, cache.get(key)) == (0, 0, None)

    def test_a_new_cluster_snapshot_alone_empties_the_cache(self) -> None:
        """Kills: `is` for `is not` on the cluster."""
        cache = VerdictCache(8)
        stored(cache, b"one")
        key = key_of(cache, b"one", cluster=ClusterSnapshot(policies=bundled_policies()))
        assert (len(cache), cache.get(key)) == (0, None)

    def test_the_same_snapshots_keep_the_entries(self) -> None:
        """Kills: the snapshots not remembered (every key empties the cache), and bytes reset to 1."""
        cache = VerdictCache(8)
        stored(cache, b"one")
        assert cache.get(key_of(cache, b"one")) is VERDICT
        key_of(cache, b"two", profiles=ProfileSnapshot(source="new"))
        assert cache.bytes == 0

    @pytest.mark.parametrize("which", ["cluster", "profiles"])
    def test_a_swapped_snapshot_takes_the_entries_decided_against_it_along(self, which: str) -> None:
        """Entries decided against a snapshot go when the snapshot goes, not at the next admission
        request. Kills: no callback on either reference."""
        cache = VerdictCache(8)
        if which == "cluster":
            old_cluster = ClusterSnapshot(policies=bundled_policies())
            cache.put(key_of(cache, b"one", cluster=old_cluster), VERDICT)
            gone: weakref.ref[object] = weakref.ref(old_cluster)
            assert (len(cache), cache.bytes > 0) == (1, True)
            del old_cluster
        else:
            old_profiles = ProfileSnapshot(source="old")
            cache.put(key_of(cache, b"one", profiles=old_profiles), VERDICT)
            gone = weakref.ref(old_profiles)
            assert (len(cache), cache.bytes > 0) == (1, True)
            del old_profiles
        gc.collect()
        assert (gone(), len(cache), cache.bytes) == (None, 0, 0)

    def test_a_swapped_snapshot_is_not_kept_alive_and_its_successor_empties_the_cache(self) -> None:
        """The refresher that swaps a snapshot frees it, not the next admission request; a snapshot
        made after the old one is gone (it may reuse its address) still empties the cache."""
        cache = VerdictCache(8)
        old = ClusterSnapshot(policies=bundled_policies())
        cache.put(key_of(cache, b"one", cluster=old), VERDICT)
        gone = weakref.ref(old)
        del old
        gc.collect()
        assert gone() is None
        key = key_of(cache, b"one", cluster=ClusterSnapshot(policies=bundled_policies()))
        assert (len(cache), cache.get(key)) == (0, None)
