"""Long-running controllers that act on the cluster (leader election, giving start-up CPU back)."""
