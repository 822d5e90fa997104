"""Historical usage profiles: Prometheus history -> per-workload recommendations -> a shared store.

Everything here is an adapter at the edge except `strategy` (pure); the admission path only ever reads
the immutable `ProfileSnapshot` that `refresh` swaps into the process state.
"""

from webhook.profiles.store import default_store_path, load_snapshot

__all__ = ["default_store_path", "load_snapshot"]
