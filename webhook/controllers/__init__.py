"""Long-running controllers that act on the cluster (leader election, profile builds, resizing Pods)."""
