"""The `pod-tailor.io/injected` annotation: every injected value with where it came from.

One line a container, so `kubectl get pod -o yaml` reads like:
    policy=default class=web (default) workload=shop/Deployment/cart
    app: requests.cpu=250m (profile: p95 usage over 14d, 20160 samples, 336h); ...
    pod: terminationGracePeriodSeconds=35 (was 30; preStop 5s + drain 30s, policy "default")
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from webhook.core.model.decision import Injection, Note

__all__ = ["explanation"]


def explanation(
    injections: Iterable[Injection],
    *,
    policy: str,
    workload: str,
    previous: str | None,
    notes: Iterable[Note] = (),
    qos: str | None = None,
    order: Mapping[str, int] | None = None,
    workload_class: str | None = None,
) -> str:
    """The annotation's text; `qos` is the class of the Pod as patched (computed, never assumed).

    `order`: target -> position; lines follow it (the Pod's containers, then `pod`), else first use.
    """
    by_target: dict[str, list[str]] = {}
    for injection in injections:
        by_target.setdefault(injection.target, []).append(injection.describe())
    for note in notes:
        by_target.setdefault(note.target, []).append(note.text)
    targets = list(by_target)
    if order is not None:
        targets.sort(key=lambda target: order.get(target, len(order)))
    lines = [f"{target}: " + "; ".join(by_target[target]) for target in targets]
    if previous:
        # A reinvocation added more: keep what the first pass explained.
        return "\n".join([previous.rstrip("\n"), *lines])
    header = f"policy={policy}" + (f" class={workload_class}" if workload_class else "")
    header += f" workload={workload}" if workload else ""
    header += f" qos={qos}" if qos else ""
    return "\n".join([header, *lines])
