"""How much a namespace's ResourceQuotas still allow its Pods' requests and limits to grow (pure).

Quota admission counts an in-place resize like a create (KEP-1287: the largest of desired, allocated
and actual values), so a resize up that would take `used` past `hard` is refused by the API server.
Asking only within the room left keeps pod-tailor from asking what cannot be granted. `cpu` and
`memory` in `hard` mean `requests.cpu` and `requests.memory`. Every quota of the namespace counts, the
scoped ones too (a resize never changes which scopes a Pod falls in, so counting them can only hold a
resize back, never let one through that the server refuses).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from webhook.core.quota import parse_quota, room

__all__ = ["quota_room"]


def quota_room(quotas: Iterable[Mapping[str, Any]]) -> dict[str, Decimal]:
    """ "requests.cpu" (and the other three) -> the smallest `hard - used` over the quotas; a key no
    quota tracks is absent (no limit). A quota whose status is not written yet counts nothing used."""
    return {key: left for key, (left, _name) in room(parse_quota(quota) for quota in quotas).items()}
