"""The strategy is pure: percentile CPU, peak x margin memory, VPA's OOM bump, floors, rounding, evidence."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webhook.core.model.profile import NoRecommendation, Recommendation
from webhook.profiles.strategy import (
    ContainerHistory,
    SeriesStats,
    StrategySettings,
    _cdf,
    confidence,
    covered_hours,
    exact_quantile,
    mixture_quantile,
    recommend,
    round_up,
    series_knots,
    startup_phase,
)

MIB = 2**20
H = 3600
DEFAULTS = StrategySettings()


def _series(
    hours: float = 48, *, samples: int = 2000, peak: float = 100 * MIB, cpu: float = 0.2
) -> SeriesStats:
    qs = dict.fromkeys(DEFAULTS.quantile_grid(), cpu)
    return SeriesStats(samples=samples, first=0.0, last=hours * H, memory_peak=peak, cpu_quantiles=qs)


def _recommend(*series: SeriesStats, **history: object) -> Recommendation:
    result = recommend(ContainerHistory(series=series, **history), settings=DEFAULTS, window="14d")  # type: ignore[arg-type]
    assert isinstance(result, Recommendation), result
    return result


class TestTooLittleHistory:
    @pytest.mark.parametrize(
        ("hours", "samples", "reason"),
        [
            (2.0, 2000, "only 2.0h and 2000 samples of history (needs 24h and 100)"),
            (23.9, 5000, "only 23.9h"),
            (48.0, 99, "99 samples"),
        ],
    )
    def test_short_or_sparse_history_gives_no_recommendation_and_says_why(
        self, hours: float, samples: int, reason: str
    ) -> None:
        result = recommend(
            ContainerHistory(series=[_series(hours, samples=samples)]), settings=DEFAULTS, window="14d"
        )
        assert isinstance(result, NoRecommendation)
        assert reason in result.reason

    def test_exactly_the_minimum_history_is_enough_and_has_confidence_one_half(self) -> None:
        result = _recommend(_series(24, samples=100_000))
        assert result.evidence.confidence == 0.5

    def test_missing_cpu_series_is_named(self) -> None:
        series = SeriesStats(samples=500, first=0, last=48 * H, memory_peak=MIB)
        result = recommend(ContainerHistory(series=[series]), settings=DEFAULTS, window="14d")
        assert result == NoRecommendation("no CPU usage series (container_cpu_usage_seconds_total)")


class TestMemory:
    @pytest.mark.parametrize(
        ("peak_mib", "oom_kills", "expected_mib"),
        [
            (100, 0, 115),  # peak x 1.15
            (1000, 0, 1150),
            (100, 1, 200),  # OOM: +100 MiB beats x1.2 for small containers
            (1000, 2, 1200),  # OOM: x1.2 beats +100 MiB for large ones
            (4, 0, 16),  # the floor
        ],
    )
    def test_memory_is_the_peak_with_margin_or_the_vpa_oom_bump(
        self, peak_mib: int, oom_kills: int, expected_mib: int
    ) -> None:
        result = _recommend(_series(peak=peak_mib * MIB), oom_kills=oom_kills)
        assert result.memory == Decimal(expected_mib * MIB)
        assert result.evidence.oom_kills == oom_kills

    def test_memory_is_rounded_up_to_whole_mebibytes(self) -> None:
        assert _recommend(_series(peak=100 * MIB + 1)).memory == Decimal(116 * MIB)

    def test_the_highest_peak_of_any_replica_counts(self) -> None:
        result = _recommend(_series(peak=100 * MIB), _series(peak=300 * MIB))
        assert result.memory == Decimal(345 * MIB)


class TestCpu:
    @pytest.mark.parametrize(
        ("cores", "expected"),
        [(0.2, "0.200"), (0.2001, "0.205"), (0.001, "0.010"), (2.5, "2.500")],
    )
    def test_cpu_is_rounded_up_to_5m_and_never_below_10m(self, cores: float, expected: str) -> None:
        assert _recommend(_series(cpu=cores)).cpu == Decimal(expected)

    def test_series_known_whole_give_the_exact_pooled_percentile(self) -> None:
        values_a = [0.1] * 90 + [1.0] * 10
        values_b = [0.2] * 100
        pooled = exact_quantile(values_a + values_b, 0.95)
        assert mixture_quantile([], values_a + values_b, 0.95) == pooled

    @given(
        st.lists(st.floats(min_value=0.001, max_value=64), min_size=2, max_size=30),
        st.integers(min_value=2, max_value=50_000),
    )
    def test_one_series_known_by_quantiles_gives_its_own_percentile(
        self, values: list[float], n: int
    ) -> None:
        qs = {q: exact_quantile(values, q) for q in DEFAULTS.quantile_grid()}
        got = mixture_quantile([(n, series_knots(SeriesStats(n, 0, 1, cpu_quantiles=qs)))], [], 0.95)
        assert math.isclose(got, qs[0.95], rel_tol=1e-9, abs_tol=1e-12)

    @given(st.lists(st.integers(min_value=1000, max_value=50_000), min_size=2, max_size=8))
    def test_alike_long_replicas_give_their_common_percentile(self, counts: list[int]) -> None:
        qs = {0.9: 0.4, 0.95: 0.5, 0.975: 0.8, 1.0: 2.0}
        components = [(n, series_knots(SeriesStats(n, 0, 1, cpu_quantiles=qs))) for n in counts]
        assert math.isclose(mixture_quantile(components, [], 0.95), 0.5, rel_tol=0.01)

    @given(
        st.lists(
            st.tuples(st.integers(min_value=2, max_value=10_000), st.floats(min_value=0.0, max_value=8)),
            min_size=1,
            max_size=6,
        )
    )
    def test_the_pooled_percentile_stays_within_the_replicas_knots_around_it(
        self, replicas: list[tuple[int, float]]
    ) -> None:
        components = []
        for n, level in replicas:
            qs = {q: level * (0.5 + q) for q in DEFAULTS.quantile_grid()}
            components.append((n, series_knots(SeriesStats(n, 0, 1, cpu_quantiles=qs))))
        got = mixture_quantile(components, [], 0.95)
        # Pooling can move the answer past a replica's own p95, never past the neighbouring knots.
        assert min(level * 1.4 for _, level in replicas) - 1e-9 <= got
        assert got <= max(level * 1.5 for _, level in replicas) + 1e-9

    @given(
        st.lists(
            st.tuples(
                st.integers(min_value=1, max_value=5_000),
                st.floats(min_value=0.0, max_value=4.0),  # the series' p95
                st.floats(min_value=0.0, max_value=4.0),  # how far its max lies above it
            ),
            min_size=1,
            max_size=8,
        ),
        st.lists(st.floats(min_value=0.0, max_value=8.0), max_size=40),
        st.floats(min_value=0.5, max_value=0.999),
    )
    def test_the_pooled_percentile_is_where_a_bisection_of_the_pooled_cdf_lands(
        self, series: list[tuple[int, float, float]], values: list[float], q: float
    ) -> None:
        summaries = [(n, [(p95, 0.95), (p95 + above, 1.0)]) for n, p95, above in series]
        got = mixture_quantile(summaries, values, q)
        # The oracle: the smallest x where the pooled CDF reaches q, by plain bisection.
        total = sum(n for n, _ in summaries) + len(values)

        def reached(x: float) -> bool:
            pooled = sum(n * _cdf(knots, x) for n, knots in summaries) + sum(v <= x for v in values)
            return pooled >= q * total

        lo, hi = 0.0, max([p95 + above for _, p95, above in series] + values)
        if reached(lo):
            hi = lo
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if reached(mid) else (mid, hi)
        assert math.isclose(got, hi, rel_tol=1e-6, abs_tol=1e-9)

    @pytest.mark.parametrize(
        ("knots", "x", "expected"),
        [
            ([(1.0, 0.95), (2.0, 1.0)], 1.5, 0.975),  # between the knots: linear
            ([(1.0, 0.95), (2.0, 1.0)], 2.5, 1.0),  # past the max
            ([(1.0, 0.95), (2.0, 1.0)], 0.5, 0.925),  # below the p95: the p95-max slope goes on down
            ([(1.0, 0.95), (2.0, 1.0)], -100.0, 0.0),  # ... never below 0
            ([(1.0, 0.95), (1.0, 1.0)], 0.5, 0.475),  # p95 = max: no slope, the line from (0, 0)
            ([(0.0, 0.95), (0.0, 1.0)], 0.0, 1.0),  # idle: everything at 0
            ([(2.0, 0.95)], 1.0, 0.475),  # one knot: the line from (0, 0)
        ],
    )
    def test_a_series_cdf_through_its_knots(
        self, knots: list[tuple[float, float]], x: float, expected: float
    ) -> None:
        assert math.isclose(_cdf(knots, x), expected, abs_tol=1e-12)

    @given(st.floats(min_value=50, max_value=99.9))
    def test_a_higher_percentile_never_gives_less_cpu(self, percentile: float) -> None:
        values = [0.05 * (i % 37) for i in range(500)]
        low = StrategySettings(cpu_percentile=percentile)
        high = StrategySettings(cpu_percentile=min(100.0, percentile + 0.1))
        history = ContainerHistory(
            series=[SeriesStats(500, 0, 48 * H, memory_peak=MIB, cpu_values=tuple(values))]
        )
        a, b = (recommend(history, settings=s, window="14d") for s in (low, high))
        assert isinstance(a, Recommendation)
        assert isinstance(b, Recommendation)
        assert a.cpu <= b.cpu


class TestEvidence:
    @pytest.mark.parametrize(
        ("intervals", "hours"),
        [
            ([(0, 10 * H)], 10),
            ([(0, 10 * H), (5 * H, 12 * H)], 12),  # overlapping replicas count once
            ([(0, 2 * H), (10 * H, 12 * H)], 4),  # gaps between Jobs do not count
            ([(0, 10 * H), (2 * H, 3 * H)], 10),
            ([], 0),
        ],
    )
    def test_hours_are_the_union_of_the_series_lives(
        self, intervals: list[tuple[float, float]], hours: float
    ) -> None:
        assert covered_hours(intervals) == hours

    @given(st.floats(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=10**7))
    def test_confidence_stays_between_zero_and_one(self, hours: float, samples: int) -> None:
        assert 0.0 <= confidence(hours, samples, DEFAULTS) <= 1.0

    @given(st.floats(min_value=0, max_value=5000), st.floats(min_value=0, max_value=5000))
    def test_more_history_never_lowers_confidence(self, a: float, b: float) -> None:
        lo, hi = sorted((a, b))
        assert confidence(lo, 10_000, DEFAULTS) <= confidence(hi, 10_000, DEFAULTS)

    def test_a_recommendation_carries_window_percentile_margin_and_counts(self) -> None:
        ev = _recommend(_series(336, samples=4000), _series(100, samples=1000)).evidence
        assert (ev.window, ev.cpu_percentile, ev.memory_margin, ev.samples, ev.hours) == (
            "14d", 95.0, 0.15, 5000, 336.0
        )


class TestStartup:
    @pytest.mark.parametrize(
        ("points", "steady", "expected"),
        [
            ([(60, 2.0), (120, 2.0), (180, 0.3), (240, 0.3)], 0.5, (2.0, 180)),
            ([(60, 0.3), (120, 0.2)], 0.5, (0.3, None)),  # never above the request: no start-up phase
            ([(60, 1.0), (120, 1.5)], 0.5, (1.5, 120)),  # still high at the window's end
        ],
    )
    def test_start_up_peak_and_how_long_usage_stayed_above_the_request(
        self, points: list[tuple[float, float]], steady: float, expected: tuple[float, float | None]
    ) -> None:
        assert startup_phase(points, steady=steady) == expected

    def test_the_profile_keeps_the_highest_peak_and_longest_phase_over_all_starts(self) -> None:
        starts = [[(60, 2.0), (120, 0.1)], [(60, 1.5), (120, 1.5), (180, 0.1)]]
        result = _recommend(_series(cpu=0.2), startups=starts)
        assert (result.startup_cpu, result.startup_seconds) == (Decimal("2.000"), 180)

    def test_a_phase_read_past_the_start_up_window_lasts_no_longer_than_the_window(self) -> None:
        # 5-minute data: the first rate comes 600 s after the start (its 10-minute window reaches into
        # the 300 s start-up window), still above the request at 900 s.
        result = _recommend(_series(cpu=0.2), startups=[[(600, 2.0), (900, 1.0)]])
        assert DEFAULTS.startup_window_seconds == 300
        assert (result.startup_cpu, result.startup_seconds) == (Decimal("2.000"), 300)


class TestSettings:
    @pytest.mark.parametrize(
        "overrides",
        [{"cpu_percentile": 0}, {"cpu_percentile": 101}, {"memory_margin": -0.1}, {"oom_factor": 0.9},
         {"cpu_step": Decimal(0)}, {"min_samples": 0}],
    )
    def test_nonsense_settings_are_refused(self, overrides: dict[str, object]) -> None:
        with pytest.raises(ValueError, match="must be"):
            StrategySettings(**overrides)  # type: ignore[arg-type]

    def test_the_quantile_grid_holds_the_target_and_the_max(self) -> None:
        grid = StrategySettings(cpu_percentile=90).quantile_grid()
        assert 0.9 in grid
        assert grid[-1] == 1.0
        assert list(grid) == sorted(grid)

    @given(st.floats(min_value=0, max_value=1e12), st.sampled_from([Decimal("0.005"), Decimal(MIB)]))
    def test_rounding_is_up_to_a_whole_step(self, value: float, step: Decimal) -> None:
        rounded = round_up(value, step, Decimal(0))
        assert rounded >= Decimal(repr(value))
        assert rounded - step < Decimal(repr(value)) or rounded == 0
        assert rounded % step == 0
