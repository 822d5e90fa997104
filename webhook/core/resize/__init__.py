"""In-place right-sizing of running Pods: the plan, the Pod's resize record, the pacing.

The plan re-runs the engine on the Pod as its author wrote it, so it sits above the engine.
"""
