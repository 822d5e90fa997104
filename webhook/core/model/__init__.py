"""The Kubernetes objects a decision reads, parsed, and the vocabulary of its answer.

Pods, quantities, workloads, namespaces, autoscalers, Services and routes, ResourceQuotas and
LimitRanges as pod-tailor reads them; usage profiles; the decision, its patch and its explanation.
Nothing here applies a policy: every other part of the core builds on these.
"""
