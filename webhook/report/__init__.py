"""`pod-tailor report` and the dashboard's data: what pod-tailor would do to a whole fleet.

collect (manifests or the live cluster) -> evaluate (the engine's own `decide` on the Pod each
controller would create) -> totals (per namespace and cluster) -> render (table, json, csv, html ...).
Nothing here decides anything: every value and its reason comes from the engine's answer.
"""
