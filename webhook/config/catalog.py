"""Every option of every `pod-tailor` verb, declared once: flag, variable, rule, default and help.

A verb names the options it takes (`webhook.commands`), `serve`'s `Settings` fields point here, and
docs/cli-reference.md is generated from it, so an option is spelled, read and explained the same way
everywhere. What configures a server, a controller or a build (`setting`) is also read from its
`POD_TAILOR_*` variable; what one run reads or writes (`argument`: files, formats) is only an option.
A verb may give an option a default of its own (`dashboard` listens on 127.0.0.1:8080, `serve` on
0.0.0.0:8443): the option, its variable and its meaning stay the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from webhook.config import values
from webhook.config.option import Option, argument, setting
from webhook.core.model.namespace import Mode
from webhook.profiles.build import BuildSettings
from webhook.profiles.connection import COMPRESSIONS
from webhook.profiles.strategy import AGGREGATES, StrategySettings

__all__ = ["CATALOG", "option"]

_BUILD, _STRATEGY = BuildSettings(), StrategySettings()
_NS = "the --pod-tailor-namespace"


def _mode(text: str) -> Mode:
    try:
        return Mode(text)
    except ValueError:
        raise ValueError(f"{text!r}: use enforce, dry-run or off") from None


_INPUT = (
    argument("filename", "input", "a manifest file, a directory of them (its .yaml, .yml and .json files; "
             "-R: its subdirectories' too), or - for stdin; repeatable", (), kind="list",
             flags=("-f", "--filename"), metavar="FILE"),
    argument("recursive", "input", "-f DIR reads its subdirectories too, as kubectl -R", False, kind="flag",
             flags=("-R", "--recursive")),
    argument("namespace", "input", "the namespace the Pods would be created in", flags=("-n", "--namespace"),
             shown="the manifest's own, else default"),
    argument("namespaces", "input", "only this namespace (repeatable); with --prometheus-url a build reads "
             "only these too", (), kind="list", flags=("-n", "--namespace"), metavar="NAMESPACE",
             shown="report, dashboard: the opted-in ones; a build: all"),
    argument("all_namespaces", "input", "every namespace, as if each were labelled "
             "pod-tailor.io/mode=enforce", False, kind="flag", flags=("-A", "--all-namespaces")),
    argument("namespace_label", "input", "a label of that namespace, e.g. pod-tailor.io/mode=dry-run "
             "(repeatable)", (), kind="list", metavar="KEY=VALUE"),
    argument("server_version", "input", "the Kubernetes version to assume", metavar="1.N", shown="unknown"),
)

_OUTPUT = (
    argument("diff", "output", "print a unified diff instead of the objects", False, kind="flag"),
    argument("patch", "output", "print the JSON Patch instead of the objects: the array for one workload; "
             "for several, one JSON object per line with its file, workload and patch", False, kind="flag"),
    argument("output", "output", "the format: report: table, wide, json, yaml, csv or html; profiles show: "
             "table, json or yaml", "table", flags=("-o", "--output")),
    argument("output_file", "output", "write the report here instead of stdout", metavar="FILE"),
    argument("exit_code", "output", "exit 1 when anything would change (a CI gate)", False, kind="flag"),
    argument("quiet", "output", "no progress output", False, kind="flag", flags=("-q", "--quiet")),
    argument("out", "output", "the directory to write the certificate, the Secret and the patch into",
             "manifests/overlays/self-signed/generated", metavar="DIR"),
    argument("days", "output", "the serving certificate's lifetime in days (at most 3650)", 365,
             rule=values.whole_between(1, 3650)),
    argument("dry_run", "output", "print what would be resized, once, and change nothing", False,
             kind="flag"),
)

_POLICY = (
    setting("policy_file", "policy", "policy YAML; without it the cluster's policy ConfigMap where a verb "
            "reads a cluster, else the bundled policy", metavar="FILE"),
    setting("policy_configmap", "policy", "the policy ConfigMap in --pod-tailor-namespace (key policy.yaml)",
            "pod-tailor-policy", metavar="NAME"),
    setting("default_mode", "policy", "the mode of namespaces not known (yet): enforce, dry-run or off",
            Mode.ENFORCE, rule=_mode, metavar="MODE"),
)

_STORE = (
    setting("profiles_path", "profile store", "the profile store file", variable="POD_TAILOR_PROFILES",
            metavar="FILE", shown="$XDG_DATA_HOME/pod-tailor/profiles.json"),
    setting("profiles_store", "profile store", "file (--profiles-path) or kubernetes (ConfigMaps in "
            "--pod-tailor-namespace)", "file", rule=values.choice("file", "kubernetes"), metavar="KIND"),
    setting("profiles_refresh_seconds", "profile store", "how often the profile store is checked for "
            "changes", 60.0, rule=values.seconds, metavar="SECONDS"),
)

_PROMETHEUS = (
    setting("prometheus_url", "Prometheus connection", "Prometheus' base URL, path prefix included; serve: "
            "if set, it rebuilds profiles itself", metavar="URL"),
    setting("prometheus_bearer_token_file", "Prometheus connection", "a file holding a bearer token, read "
            "again when it changes", metavar="FILE"),
    setting("prometheus_username", "Prometheus connection", "basic auth user name", metavar="NAME"),
    setting("prometheus_password_file", "Prometheus connection", "a file holding the basic auth password, "
            "read again when it changes", metavar="FILE"),
    setting("prometheus_password", "Prometheus connection", "basic auth password (a variable only: options "
            "show in the process list)", flags=()),
    setting("prometheus_header", "Prometheus connection", "an extra header 'Name: value', e.g. "
            "'X-Scope-OrgID: team-a' (repeatable; the variable: one per line)", (), kind="list",
            metavar="HEADER"),
    setting("prometheus_ca_file", "Prometheus connection", "the CA bundle to verify Prometheus with",
            metavar="FILE"),
    setting("prometheus_cert_file", "Prometheus connection", "client certificate (PEM)", metavar="FILE"),
    setting("prometheus_key_file", "Prometheus connection", "client certificate key (PEM)", metavar="FILE"),
    setting("prometheus_insecure_skip_verify", "Prometheus connection", "do not verify Prometheus' "
            "certificate (tests only: a loud warning)", False, kind="switch"),
    setting("prometheus_selector", "Prometheus connection", "label matchers added to every query, e.g. "
            "'cluster=\"prod-eu\"'", metavar="MATCHERS"),
    setting("prometheus_timeout", "Prometheus connection", "seconds per Prometheus query", 120.0,
            rule=values.seconds, metavar="SECONDS"),
    setting("prometheus_compression", "Prometheus connection", "gzip, none, or auto: none for a loopback or "
            "private address or a Service name (no dots, .svc, .cluster.local; gzip costs Prometheus about 8 "
            "times the CPU of sending the answer), gzip for any other", "auto",
            rule=values.choice(*COMPRESSIONS), metavar="KIND"),
    setting("dry_run_window", "Prometheus connection", "the window of the dry-run counts", "24h",
            rule=values.duration, metavar="DURATION"),
)

_BUILD_OPTIONS = (
    setting("window", "profile build", "history to read", _BUILD.window, rule=values.duration,
            metavar="DURATION"),
    setting("step", "profile build", "usage resolution: auto (the rate window less one scrape interval, at "
            "least 1m: each sample interval counted once) or a duration, raised to the data's own interval "
            "when coarser", _BUILD.step, rule=values.auto_or_duration, metavar="DURATION"),
    setting("rate_window", "profile build", "rate() window over the CPU counter: auto (2 scrape intervals, "
            "the shortest valid) or a duration, raised to 2 intervals when shorter", _BUILD.rate_window,
            rule=values.auto_or_duration, metavar="DURATION"),
    setting("percentile", "profile build", "CPU request percentile", _STRATEGY.cpu_percentile,
            rule=values.number_between(0, 100, low_open=True), metavar="P"),
    setting("aggregate", "profile build", "CPU percentile of every Pod's points together (pooled) or the "
            "largest Pod's own (maxPerPod, as KRR)", _STRATEGY.cpu_aggregate, rule=values.choice(*AGGREGATES),
            metavar="HOW"),
    setting("exact_cpu", "profile build", "count the CPU percentile exactly; --no-exact-cpu rebuilds it from "
            "each Pod's quantiles (cheaper; a few percent off when Pods differ)", True, kind="switch"),
    setting("statistics_from", "profile build", "also count the CPU statistics this policy file's policies "
            "name (profiles.cpu), for the webhook to size their workloads with", metavar="POLICY_FILE"),
    setting("memory_margin", "profile build", "memory request = peak x (1 + margin)", _STRATEGY.memory_margin,
            rule=values.number_between(0, 10), metavar="MARGIN"),
    setting("min_hours", "profile build", "less history gives no recommendation", _STRATEGY.min_hours,
            rule=values.at_least(0), metavar="HOURS"),
    setting("min_samples", "profile build", "fewer points give no recommendation", _STRATEGY.min_samples,
            rule=values.positive_count, metavar="N"),
    setting("startup_window", "profile build", "seconds after a container start counted as start-up (CPU "
            "rates whose rate window reaches into them are read; the phase never lasts longer)",
            _STRATEGY.startup_window_seconds, rule=values.count, metavar="SECONDS"),
    setting("cpu_rate_metric", "profile build", "a recorded per-container CPU rate to read instead of rate() "
            "over the cadvisor counter, e.g. node_namespace_pod_container:container_cpu_usage_seconds_total:"
            "sum_irate (kube-prometheus)", metavar="METRIC"),
    setting("startup_lookback", "profile build", "start-up CPU from container starts this recent",
            _BUILD.startup_lookback, rule=values.duration, metavar="DURATION"),
    setting("slices", "profile build", "cut the big passes into this many time slices", 0, rule=values.count,
            metavar="N", shown="0: as many as keep a slice under --samples-per-query"),
    setting("samples_per_query", "profile build", "samples of one time slice of a big pass, all shards "
            "together", _BUILD.samples_per_query, rule=values.positive_count, metavar="N"),
    setting("prometheus_max_samples", "profile build", "samples one query may touch: each slice is split by "
            "namespace, container and Pod-name classes to stay under it (Prometheus refuses 50 M by default, "
            "managed services less)", _BUILD.max_samples, rule=values.positive_count, metavar="N"),
    setting("prometheus_concurrency", "profile build", "queries in flight at once: what a build costs "
            "Prometheus at a time", _BUILD.concurrency, rule=values.positive_count, metavar="N"),
    setting("allow_partial", "profile build", "write the store even when Prometheus reports partial data "
            "(warnings)", False, kind="flag"),
    setting("max_shrink", "profile build", "a build that would lose more than this share of the store's "
            "recommendations keeps the previous ones for the containers it lost", 0.2,
            rule=values.number_between(0, 1), metavar="SHARE"),
    setting("allow_shrink", "profile build", "write what the build found even when it loses more than "
            "--max-shrink of the recommendations", False, kind="flag"),
    setting("checkpoint", "profile build", "the file keeping the answers of past days between builds, so "
            "that a build asks Prometheus only for what changed since", metavar="FILE",
            shown="$XDG_CACHE_HOME/pod-tailor/build-checkpoint.json; with --namespace, one per set"),
    setting("no_checkpoint", "profile build", "read the whole window from Prometheus every time", False,
            kind="flag"),
    setting("summary_days", "profile build", "days of hourly usage kept as each container's drawable "
            "summary (one to four queries a day; 0: none)", _BUILD.summary_days, rule=values.count,
            metavar="DAYS"),
    argument("end", "profile build", "unix time the window ends at, for a build as of then",
             rule=values.at_least(0), metavar="UNIX_TIME", shown="now"),
    setting("interval", "profile build", "seconds between builds", 3600.0, rule=values.seconds,
            metavar="SECONDS"),
    setting("retry", "profile build", "seconds before a failed build is tried again", 300.0,
            rule=values.seconds, metavar="SECONDS"),
    argument("max_builds", "profile build", "stop after this many builds; the exit code is the last one's",
             0, rule=values.count, metavar="N", shown="0: never"),
    setting("profiles_build_seconds", "profile build", "how often serve rebuilds profiles when "
            "--prometheus-url is set", 3600.0, rule=values.seconds, metavar="SECONDS"),
)

_CONTROLLER = (
    setting("tick", "controller", "seconds between passes (at most)", 1.0, rule=values.seconds,
            metavar="SECONDS"),
    setting("max_resizes_per_minute", "controller", "in-place right-sizing, cluster-wide", 30,
            rule=values.count, metavar="N"),
    setting("include_enforce", "controller", "report on enforce namespaces too (what pod-tailor sets at "
            "admission), not only dry-run ones", False, kind="flag"),
    setting("max_writes_per_second", "controller", "Report writes a second on average, cluster-wide", 10.0,
            rule=values.at_least(0.01), metavar="N"),
    setting("burst", "controller", "Report writes at once at most", 50, rule=values.positive_count,
            metavar="N"),
    setting("crd_check_seconds", "controller", "without the Report CRD, look for it again this often", 300.0,
            rule=values.seconds, metavar="SECONDS"),
)

_CLUSTER = (
    setting("kubeconfig", "cluster", "the kubeconfig", metavar="FILE",
            shown="in-cluster, else $KUBECONFIG, else ~/.kube/config"),
    setting("pod_tailor_namespace", "cluster", "pod-tailor's own namespace: its policy and profile "
            "ConfigMaps and its Leases", "pod-tailor", variable="POD_TAILOR_NAMESPACE", metavar="NAMESPACE"),
    setting("watch_cluster", "cluster", "watch Namespaces, LimitRanges, the policy ConfigMap (if a cluster)",
            True, kind="switch"),
    setting("resync_seconds", "cluster", "watch length before resuming, and the server version's refresh "
            "period", 300.0, rule=values.at_least(1), metavar="SECONDS"),
    argument("context", "cluster", "the kubeconfig context kubectl uses", metavar="NAME",
             shown="the current context"),
    argument("kubectl", "cluster", "the kubectl binary", metavar="FILE", shown="kubectl on PATH"),
    argument("service", "cluster", "the webhook Service's name", "pod-tailor", metavar="NAME"),
    argument("secret", "cluster", "the Secret's name", "pod-tailor-tls", metavar="NAME"),
    argument("webhook_configuration", "cluster", "the MutatingWebhookConfiguration's name", "pod-tailor",
             metavar="NAME"),
    argument("webhook", "cluster", "a webhook entry to fill in (repeatable)", ("pods.pod-tailor.io",),
             kind="list", metavar="NAME"),
)

_SERVER = (
    setting("host", "server", "the address to listen on", "0.0.0.0", metavar="ADDRESS"),
    setting("port", "server", "the port to listen on", 8443, rule=values.port),
    setting("cert_file", "server", "TLS certificate (PEM), reloaded on change", metavar="FILE"),
    setting("key_file", "server", "TLS private key (PEM), reloaded on change", metavar="FILE"),
    setting("cert_reload_seconds", "server", "how often the certificate files are checked for changes", 5.0,
            rule=values.seconds, metavar="SECONDS"),
    setting("log_level", "server", "debug, info, warning or error (JSON lines on stderr)", "info",
            rule=values.choice("debug", "info", "warning", "error"), metavar="LEVEL"),
    setting("max_body_bytes", "server", "larger request bodies get 413 (the API server's own limit)",
            3 * 1024 * 1024, rule=values.positive_count, metavar="BYTES"),
    setting("verdict_cache_size", "server", "answers kept for identical Pods (replicas of one template); "
            "0: none", 1024, rule=values.count, metavar="N"),
    setting("verdict_cache_bytes", "server", "bytes the verdict cache may hold (inside a 256Mi limit)",
            32 * 1024 * 1024, rule=values.count, metavar="BYTES"),
    setting("admission_timeout_seconds", "server", "the webhook's registered timeoutSeconds: the deadline "
            "without ?timeout=", 3.0, rule=values.seconds, metavar="SECONDS"),
    setting("max_in_flight", "server", "requests read or decided at once; more are answered allowed, "
            "unchanged", 256, rule=values.positive_count, metavar="N"),
    setting("max_in_flight_bytes", "server", "declared body bytes in flight at once; more are shed alike",
            64 * 1024 * 1024, rule=values.positive_count, metavar="BYTES"),
    setting("max_connections", "server", "open connections; past it the oldest still sending headers is "
            "closed", 1000, rule=values.positive_count, metavar="N"),
    setting("header_timeout_seconds", "server", "a request's headers must arrive within this (from connect "
            "or first byte)", 5.0, rule=values.seconds, metavar="SECONDS"),
    setting("body_timeout_seconds", "server", "a request's body must arrive within this after its headers",
            10.0, rule=values.seconds, metavar="SECONDS"),
    setting("tls_handshake_timeout_seconds", "server", "a TLS handshake must complete within this", 5.0,
            rule=values.seconds, metavar="SECONDS"),
    setting("keep_alive_seconds", "server", "idle keep-alive; longer than the API server's 90 s, so the "
            "client closes", 120, rule=values.positive_count, metavar="SECONDS"),
    setting("drain_seconds", "server", "after SIGTERM: not ready, answering with Connection: close, then "
            "stop", 5.0, rule=values.seconds_or_zero, metavar="SECONDS"),
    setting("refresh_seconds", "server", "how often the cluster (or the manifests) and the store are read "
            "again", 60.0, rule=values.seconds, metavar="SECONDS"),
    setting("metrics_port", "server", "serve /metrics over HTTP on this port; 0: not at all", 0,
            rule=values.port_or_off, metavar="PORT"),
    setting("metrics_host", "server", "the address for --metrics-port", "0.0.0.0", metavar="ADDRESS"),
)

_ELECTION = (
    setting("leader_elect", "leader election", "do the work only while holding a coordination.k8s.io Lease",
            False, kind="switch"),
    setting("lease_name", "leader election", "the Lease's name", "pod-tailor", metavar="NAME"),
    setting("lease_namespace", "leader election", "the Lease's namespace", metavar="NAMESPACE", shown=_NS),
)


def _catalog(options: Iterable[Option]) -> Mapping[str, Option]:
    """By name; a name or a variable declared twice is a mistake caught at import."""
    found: dict[str, Option] = {}
    variables: set[str] = set()
    for declared in options:
        assert declared.name not in found, declared.name
        assert declared.variable is None or declared.variable not in variables, declared.variable
        found[declared.name] = declared
        if declared.variable:
            variables.add(declared.variable)
    return found


CATALOG = _catalog((*_INPUT, *_OUTPUT, *_POLICY, *_STORE, *_PROMETHEUS, *_BUILD_OPTIONS, *_CONTROLLER,
                    *_CLUSTER, *_SERVER, *_ELECTION))


def option(name: str) -> Option:
    return CATALOG[name]
