"""Probes and a clean shutdown for the containers a Service sends traffic to."""
