"""Overload without a queue: a request that cannot be decided in time is answered at once, allowed.

A webhook that queues under load answers after the API server has given up (`failurePolicy:
Ignore` then admits the Pod untailored anyway) and spends its CPU on callers who are gone. Instead
a request is shed - `allowed: true`, no patch, a warning, `pod_tailor_shed_total{reason}` - when:
- `deadline`: its time budget (`deadline.BUDGET` of `?timeout=`) ran out before the decision could
  start (it waited behind other work on the event loop);
- `in_flight`: more requests than `max_in_flight` are being read or decided at once;
- `in_flight_bytes`: their declared bodies would hold more than `max_in_flight_bytes` in memory.
  Then only the start of the body is read: the API server writes the uid first.
Not a 429 or 503: the API server would count those as webhook failures, log them and admit the
Pod untailored all the same, only later.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum

__all__ = ["Gate", "ShedReason"]


class ShedReason(StrEnum):
    DEADLINE = "deadline"
    IN_FLIGHT = "in_flight"
    IN_FLIGHT_BYTES = "in_flight_bytes"


_MESSAGES = {
    ShedReason.DEADLINE: "not decided within the request's deadline",
    ShedReason.IN_FLIGHT: "overloaded (too many requests at once)",
    ShedReason.IN_FLIGHT_BYTES: "overloaded (too many request bytes at once)",
}


@dataclass
class Gate:
    """Requests being read or decided, by count and declared bytes (the event loop's one thread only)."""

    max_in_flight: int
    max_in_flight_bytes: int
    in_flight: int = 0
    in_flight_bytes: int = 0
    shed: Counter[ShedReason] = field(default_factory=Counter)

    def admit(self, declared: int) -> ShedReason | None:
        """Enter with a body of `declared` bytes; a reason to shed it instead (it is then not entered)."""
        if self.in_flight >= self.max_in_flight:
            return ShedReason.IN_FLIGHT
        if self.in_flight and self.in_flight_bytes + declared > self.max_in_flight_bytes:
            return ShedReason.IN_FLIGHT_BYTES
        self.in_flight += 1
        self.in_flight_bytes += declared
        return None

    def leave(self, declared: int) -> None:
        self.in_flight -= 1
        self.in_flight_bytes -= declared

    def count(self, reason: ShedReason) -> str:
        """Count a shed request; the reason as the warning words it."""
        self.shed[reason] += 1
        return _MESSAGES[reason]
