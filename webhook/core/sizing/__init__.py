"""Requests and limits: from a confident profile or the policy, within every bound.

Container sizing, the Pod's LimitRange, the daily step limit, the autoscalers' holds and the HPA
headroom check.
"""
