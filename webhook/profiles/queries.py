"""PromQL for the profile build: a handful of large queries, grouped per cluster or per namespace.

Each builder returns one small string. Nothing is ever queried per Pod: every query selects all
containers of the namespaces in scope (`namespace=~"a|b"`, or every namespace) and reduces them on the
server (`quantile_over_time`, `max_over_time`, ...) so the answer is one value per series, not a range.
Several statistics travel in one request, told apart by a `stat` label set with `label_replace`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from webhook.profiles.shards import Shard

__all__ = [
    "CPU_METRIC",
    "MEMORY_METRIC",
    "cpu_stats",
    "duration",
    "hpa_targets",
    "memory_stats",
    "owner_series",
    "owners_query",
    "requests_query",
    "safe_rate_window",
    "selector",
    "stat_label",
    "usage_by_controller",
    "usage_totals",
]

CPU_METRIC = "container_cpu_usage_seconds_total"
MEMORY_METRIC = "container_memory_working_set_bytes"
START_METRIC = "container_start_time_seconds"
OOM_METRIC = "kube_pod_container_status_last_terminated_reason"
REQUESTS_METRIC = "kube_pod_container_resource_requests"
_BY = "namespace, pod, container"
SAFE_SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"  # the random 5 characters at the end of a Pod's name

_DURATION = re.compile(r"^(\d+)([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def duration(text: str) -> int:
    """`"14d"` -> seconds; only the single-unit forms people type (`90s`, `5m`, `6h`, `14d`, `2w`)."""
    match = _DURATION.match(text.strip())
    if not match or int(match[1]) <= 0:
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 5m, 6h, 14d, 2w)")
    return int(match[1]) * _UNITS[match[2]]


def safe_rate_window(rate_window: int, *, interval: float) -> tuple[int, str]:
    """A `rate()` window of at least two scrape intervals, and why it was raised ("" when it was not).

    `rate()` needs two samples in its window: below two intervals it returns nothing for most steps, so
    CPU usage would read as (near) zero and a build would shrink every request it writes.
    """
    needed = math.ceil(2 * interval)
    if interval <= 0 or rate_window >= needed:
        return rate_window, ""
    return needed, (
        f"the rate window {promql_duration(rate_window)} is under 2 x the scrape interval "
        f"({interval:g}s): raised to {promql_duration(needed)}, or CPU usage would read as near zero"
    )


def promql_duration(seconds: int) -> str:
    """Seconds as the largest exact PromQL unit (`1209600` -> `14d`)."""
    for unit in ("w", "d", "h", "m"):
        if seconds % _UNITS[unit] == 0:
            return f"{seconds // _UNITS[unit]}{unit}"
    return f"{seconds}s"


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def selector(
    metric: str, namespaces: Sequence[str] = (), *, containers: bool = True, pod_pattern: str | None = None,
    shard: Shard | None = None, **extra: str,
) -> str:
    """`metric{container!="",container!="POD",namespace=~"a|b"}`; no namespaces means all of them.

    `namespace` values are matched literally (regex-escaped); Prometheus anchors the regex.
    `pod_pattern`: only the Pods whose name it matches. `shard`: only its container names and Pods
    (`webhook.profiles.shards`; its namespaces are the caller's to pass).
    """
    matchers = ['container!=""', 'container!="POD"'] if containers else []
    if len(namespaces) == 1:  # an equality matcher is cheaper and lets remote-read required_matchers apply
        matchers.append(f"namespace={_quote(namespaces[0])}")
    elif namespaces:
        matchers.append(f"namespace=~{_quote(_literally(namespaces))}")
    if shard is not None:
        pod_pattern = shard.pod_pattern()
        if shard.containers:  # literal alternatives: Prometheus looks each name up, no scan
            one, many = ("!=", "!~") if shard.other_containers else ("=", "=~")
            matchers.append(
                f"container{one}{_quote(shard.containers[0])}" if len(shard.containers) == 1
                else f"container{many}{_quote(_literally(shard.containers))}"
            )
    if pod_pattern is not None:
        matchers.append(f"pod=~{_quote(pod_pattern)}")
    matchers += [f"{key}={_quote(value)}" for key, value in sorted(extra.items())]
    return f"{metric}{{{','.join(matchers)}}}"


_META = re.compile(r"([\\.+*?()|\[\]{}^$])")  # Go's regexp.QuoteMeta: what RE2 must see escaped


def _literally(values: Sequence[str]) -> str:
    """A regular expression matching exactly these values, escaped as Go's `regexp.QuoteMeta` does.

    Python's `re.escape` also escapes `-`, which RE2 reads the same but Prometheus' set matching
    (`a|b|c` looked up value by value in the index) refuses: every Pod name of every block would then
    be run through the regular expression, an order of magnitude slower (docs/benchmarks.md)."""
    return "|".join(_META.sub(r"\\\1", value) for value in sorted(values))


def stat_label(expression: str, stat: str) -> str:
    """Tag every series of `expression` with `stat="<stat>"` so several answers share one request."""
    return f'label_replace({expression}, "stat", {_quote(stat)}, "", "")'


def _union(parts: Iterable[str]) -> str:
    return " or ".join(f"({part})" for part in parts)


def cpu_usage(
    namespaces: Sequence[str], *, rate_window: int, recorded: str | None = None, pods: Sequence[str] = (),
    pod_pattern: str | None = None, shard: Shard | None = None, container: str | None = None,
    containers: Sequence[str] = (),
) -> str:
    """CPU cores per container: `rate()` over the cadvisor counter, or a recorded rate when one exists.

    kube-prometheus records `node_namespace_pod_container:container_cpu_usage_seconds_total:sum_irate`;
    reading such a gauge is a pass over raw samples instead of a `rate()` at every step.
    """
    series = selector(recorded or CPU_METRIC, namespaces, pod_pattern=pod_pattern, shard=shard)
    if container is not None:
        series = series[:-1] + f",container={_quote(container)}}}"
    if len(containers) == 1:
        series = series[:-1] + f",container={_quote(containers[0])}}}"
    elif containers:
        series = series[:-1] + f",container=~{_quote(_literally(containers))}}}"
    if pods:
        series = series[:-1] + f",pod=~{_quote(_literally(pods))}}}"
    return series if recorded else f"rate({series}[{promql_duration(rate_window)}])"


def cpu_stats(
    namespaces: Sequence[str],
    *,
    span: int,
    step: int,
    rate_window: int,
    quantiles: Sequence[float],
    recorded: str | None = None,
    shard: Shard | None = None,
) -> str:
    """Per container: the given quantiles (1.0 = max) of its CPU usage over `span`.

    `by (namespace, pod, container)` keeps only the labels a build reads (cadvisor adds long `id`,
    `image`, `name` ones) and folds duplicates (a restart's new cgroup) into the higher value.
    """
    usage = cpu_usage(namespaces, rate_window=rate_window, recorded=recorded, shard=shard)
    # A recorded gauge is read as it is; a rate needs a subquery at the usage resolution.
    sub = f"[{promql_duration(span)}]" if recorded else f"[{promql_duration(span)}:{promql_duration(step)}]"
    parts = [
        stat_label(
            f"max by ({_BY}) ("
            + (f"max_over_time({usage}{sub})" if q >= 1.0 else f"quantile_over_time({q:g}, {usage}{sub})")
            + ")",
            f"q{q:g}",
        )
        for q in quantiles
    ]
    return _union(parts)


def cpu_values(
    namespaces: Sequence[str], pods: Sequence[str], *, rate_window: int, recorded: str | None = None
) -> str:
    """The CPU usage of the named Pods (a range query; for short-lived Pods only: few points)."""
    return cpu_usage(namespaces, rate_window=rate_window, recorded=recorded, pods=pods)


def memory_stats(
    namespaces: Sequence[str], *, span: int, latest: int = 300, shard: Shard | None = None
) -> str:
    """Per container series: peak working set, sample count, first and latest container start.

    Only range functions over raw samples (one cheap pass each); a series' life is then its start
    (cadvisor's `container_start_time_seconds`) plus its sample count times the scrape interval.
    Duplicate series of one container fold as their meaning says: highest peak, summed counts,
    earliest start. The latest start (a restart in place) is read over the last `latest` seconds
    only, which costs next to nothing.
    """
    window = promql_duration(span)
    memory = selector(MEMORY_METRIC, namespaces, shard=shard)
    start = selector(START_METRIC, namespaces, shard=shard)
    return _union(
        [
            stat_label(f"max by ({_BY}) (max_over_time({memory}[{window}]))", "max"),
            stat_label(f"sum by ({_BY}) (count_over_time({memory}[{window}]))", "count"),
            stat_label(f"min by ({_BY}) (min_over_time({start}[{window}]))", "start"),
            stat_label(f"max by ({_BY}) (last_over_time({start}[{promql_duration(min(latest, span))}]))",
                       "latest"),
        ]
    )


def usage_by_controller(
    namespaces: Sequence[str], *, rate_window: int, recorded: str | None = None
) -> dict[str, str]:
    """Per stat, a query for the CPU (`cpu`, cores) or the working set (`memory`, bytes) per container,
    averaged over the Pods of one controller: for a range query at coarse steps (the drawable summaries).

    The Pods' random suffix is cut off in PromQL, so replicas and churned Pods of one ReplicaSet,
    DaemonSet or Job arrive as one series instead of one each: `controller` is `<name>~` for a Pod
    whose suffix was cut, `~<name>` for one without (a StatefulSet's, a bare Pod); `~` is never in a
    name. One query per stat, not one `or` of both: the union relabels (`stat`) and matches every
    series at every step again, and with one kind a query the pieces can be twice as long at the same
    heap (`summarize`); Prometheus caches the regular expression's result per series and query.
    """

    def per_controller(expression: str) -> str:
        pattern = f"(?:(.+)-{SAFE_SUFFIX}|(.+))"
        cut = f'label_replace({expression}, "controller", "${{1}}~${{2}}", "pod", "{pattern}")'
        return f"avg by (namespace, controller, container) ({cut})"

    return {
        "cpu": per_controller(cpu_usage(namespaces, rate_window=rate_window, recorded=recorded)),
        "memory": per_controller(selector(MEMORY_METRIC, namespaces)),
    }


def coverage(namespaces: Sequence[str], *, span: int, coverage_step: int) -> str:
    """First and last time each series was seen, at `coverage_step` (when start times are missing).

    `timestamp(-x)` rather than `timestamp(x)`: on a bare selector inside a subquery the latter is
    some 50 times slower in Prometheus 2.x. A subquery costs a pass per step, hence a coarse step.
    """
    series = selector(MEMORY_METRIC, namespaces)
    sub = f"[{promql_duration(span)}:{promql_duration(coverage_step)}]"
    return _union(
        [
            stat_label(f"min_over_time(timestamp(-{series}){sub})", "first"),
            stat_label(f"max_over_time(timestamp(-{series}){sub})", "last"),
        ]
    )


def scrape_interval(namespaces: Sequence[str], *, pod_pattern: str | None = None) -> str:
    """Over the last hour: samples per live memory series by namespace (their 90th percentile, a
    series that lived the whole hour; `stat="per_hour"`:
    3600 / this is its scrape interval), over the Pods `pod_pattern` matches (all without it),
    and how many series each namespace's containers have (`stat="series"`): what sizes the big
    queries and plans their shards."""
    def per_series(pattern: str | None) -> str:
        return f"count_over_time({selector(MEMORY_METRIC, namespaces, pod_pattern=pattern)}[1h])"

    return _union(
        [stat_label(f"quantile by (namespace) (0.9, {per_series(pod_pattern)})", "per_hour"),
         stat_label(f"count by (namespace, container) ({per_series(None)})", "series")]
    )


def samples_per_hour(namespaces: Sequence[str], *, pod_pattern: str | None = None) -> str:
    """Per namespace, the samples per memory series (its 90th percentile: a series that lived the
    whole hour) over the hour before the evaluation time
    (`stat="per_hour"`): `scrape_interval`'s first half, asked again where the window starts, where a
    long-term store keeps older data downsampled."""
    series = selector(MEMORY_METRIC, namespaces, pod_pattern=pod_pattern)
    return stat_label(f"quantile by (namespace) (0.9, count_over_time({series}[1h]))", "per_hour")


def live_series(namespaces: Sequence[str], *, pod_patterns: Mapping[str, str | None]) -> str:
    """Per name (`stat`), how many memory series of the Pods its pattern matches lived in the last
    hour: the share of `scrape_interval`'s count a query over just those Pods reads."""
    def counted(pattern: str | None) -> str:
        return f"count(last_over_time({selector(MEMORY_METRIC, namespaces, pod_pattern=pattern)}[1h]))"

    return _union(stat_label(counted(pattern), name) for name, pattern in pod_patterns.items())


def oom_kills(namespaces: Sequence[str], *, span: int) -> str:
    """1 for every container series whose last termination in the window was an OOM kill."""
    series = selector(OOM_METRIC, namespaces, reason="OOMKilled")
    return f"max_over_time({series}[{promql_duration(span)}]) > 0"


def requests_query(namespaces: Sequence[str], *, span: int) -> str:
    """Current cpu and memory requests per container (kube-state-metrics), the last value in the window."""
    series = selector(REQUESTS_METRIC, namespaces).replace("}", ',resource=~"cpu|memory"}')
    return f"last_over_time({series}[{promql_duration(span)}])"


def owner_series(namespaces: Sequence[str]) -> list[str]:
    """kube-state-metrics owners (Pod -> controller, ReplicaSet/Job -> controller): the selectors of
    one `/api/v1/series` request (their labels are the answer; their samples are all 1)."""
    return [selector("kube_pod_owner", namespaces, containers=False, owner_is_controller="true"),
            selector("kube_replicaset_owner", namespaces, containers=False),
            selector("kube_job_owner", namespaces, containers=False)]


def owners_query(namespaces: Sequence[str], *, span: int) -> str:
    """The same owners as one instant query (every sample over the window decoded): for a backend
    whose `/api/v1/series` refuses the listing (VictoriaMetrics' `-search.maxSeries`)."""
    window = promql_duration(span)
    return _union(f"max_over_time({series}[{window}])" for series in owner_series(namespaces))


HPA_INFO_METRIC = "kube_horizontalpodautoscaler_info"  # kube-state-metrics 2.x: the HPA's scale target
HPA_METRIC = "kube_horizontalpodautoscaler_spec_max_replicas"  # every kube-state-metrics version has it
# One series per metric an HPA scales on (`metric_name`: `cpu`, `memory` for Resource metrics).
HPA_TARGET_METRIC = "kube_horizontalpodautoscaler_spec_target_metric"


def hpa_targets(namespaces: Sequence[str], *, span: int) -> str:
    """What the HPAs of the window scale (`stat="target"`, by namespace, HPA, kind and name) on which
    metrics (`stat="metric"`, by namespace, HPA and metric name), how many HPAs there are
    (`stat="hpas"`) and whether kube-state-metrics reports Pods at all (`stat="pods"`): few series,
    one request. HPAs and their targets are matched in the build, not joined here: a join refuses a
    whole answer for one HPA whose target changed within the window."""
    window = promql_duration(span)
    info = selector(HPA_INFO_METRIC, namespaces, containers=False)
    metrics = selector(HPA_TARGET_METRIC, namespaces, containers=False)
    hpas = selector(HPA_METRIC, namespaces, containers=False)
    pods = selector("kube_pod_owner", namespaces, containers=False)
    return _union([
        stat_label(f"max by (namespace, horizontalpodautoscaler, scaletargetref_kind, scaletargetref_name) "
                   f"(max_over_time({info}[{window}]))", "target"),
        stat_label(f"max by (namespace, horizontalpodautoscaler, metric_name) "
                   f"(max_over_time({metrics}[{window}]))", "metric"),
        stat_label(f"count(max_over_time({hpas}[{window}]))", "hpas"),
        # Only the last hour: presence, not history (one series per Pod).
        stat_label(f"count(last_over_time({pods}[{promql_duration(min(span, 3600))}]))", "pods"),
    ])


quote = _quote  # PromQL's double-quoted string, for the label matchers of a connection's selector

_LEXEME = re.compile(
    r"""(?P<space>\s+|\#[^\n]*)
    |(?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
    |(?P<number>0[xX][0-9a-fA-F]+|(?:\d+(?:ms|[smhdwy]))+|(?:\d*\.\d+|\d+\.?)(?:[eE][-+]?\d+)?)
    |(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)
    |(?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
_GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
_KEYWORDS = _GROUPING | {
    "and", "or", "unless", "bool", "offset", "atan2", "inf", "nan", "sum", "min", "max", "avg", "group",
    "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio",
}


def scoped(query: str, matchers: str) -> str:
    """`query` with `matchers` (`cluster="prod-eu"`) added to every one of its series selectors.

    A connection's selector picks one cluster (or tenant, or environment) out of a shared server for
    every query anyone asks, the ones added later included, so it is applied to the finished text by
    a small PromQL lexer: after each `{` that opens a selector's matchers, and as `{...}` after a bare
    metric name (a name that is no keyword, no function call and no label of a `by (...)` list).
    """
    if not matchers:
        return query
    lexemes = [(lexeme.lastgroup or "", lexeme.group()) for lexeme in _LEXEME.finditer(query)]
    significant = [i for i, (kind, _) in enumerate(lexemes) if kind != "space"]
    following = dict(zip(significant, [*significant[1:], None], strict=True))
    out: list[str] = []
    braces = brackets = 0
    labels = False  # inside the label list of by/without/on/ignoring/group_left/group_right
    for i, (kind, text) in enumerate(lexemes):
        out.append(text)
        after = following.get(i)
        upcoming = lexemes[after][1] if after is not None else ""
        if kind == "other":
            if text == "{":
                braces += 1
                out.append(matchers if upcoming == "}" else matchers + ",")
            elif text == "}":
                braces -= 1
            elif text == "[":
                brackets += 1
            elif text == "]":
                brackets -= 1
            elif text == ")" and labels:
                labels = False
        elif kind == "name" and not braces and not brackets and not labels:
            word = text.lower()
            if word in _GROUPING and upcoming == "(":
                labels = True
            elif word not in _KEYWORDS and upcoming not in ("(", "{"):
                out.append("{" + matchers + "}")
    return "".join(out)


GROUP_LABEL = "pod_tailor_group"
# A Pod's name without its own last part (its controller's name) and without a template hash before
# it (a ReplicaSet's): one regular expression, so Prometheus rewrites each series once per step
# rather than twice (about half of the totals query's time).
POD_GROUP = "(.+?)(?:-[bcdfghjklmnpqrstvwxz2456789]{6,10})?-[^-]+"


def usage_totals(
    namespaces: Sequence[str], *, span: int, step: int, rate_window: int, recorded: str | None = None,
    pod_patterns: Mapping[str, str | None] | None = None,
) -> str:
    """Per namespace, Pod group and container: the peak over `span` of the usage summed over the Pods.

    Pods are summed at each step by their name without the random suffix and a template hash
    (`web-7d4b9c8f6-x7k2p` -> `web`, `db-1` -> `db`), so the ReplicaSets of one Deployment add up
    during a rollout; the build maps each group to the workload of its Pods (`webhook.profiles.totals`).
    A subquery at `step` (coarser than the usage passes: a peak of the whole, not a percentile).
    `pod_patterns`: per resource (`cpu`, `memory`), the Pods to sum (None: every one); a resource it
    leaves out is not asked. None asks both over every Pod.
    """
    sub = f"[{promql_duration(span)}:{promql_duration(step)}]"
    by = f"namespace, {GROUP_LABEL}, container"

    def grouped(expression: str) -> str:
        return f'label_replace({expression}, "{GROUP_LABEL}", "$1", "pod", "{POD_GROUP}")'

    def usage(resource: str, pattern: str | None) -> str:
        if resource == "cpu":
            return cpu_usage(namespaces, rate_window=rate_window, recorded=recorded, pod_pattern=pattern)
        return selector(MEMORY_METRIC, namespaces, pod_pattern=pattern)

    patterns = dict.fromkeys(("cpu", "memory")) if pod_patterns is None else pod_patterns
    return _union(
        stat_label(f"max_over_time(sum by ({by}) ({grouped(usage(stat, patterns[stat]))}){sub})", stat)
        for stat in ("cpu", "memory") if stat in patterns
    )
