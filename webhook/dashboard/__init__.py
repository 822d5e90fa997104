"""`pod-tailor dashboard`: the fleet report as server-rendered pages and JSON (read-only)."""
