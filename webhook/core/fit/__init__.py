"""Values held to what the cluster has room for: the nodes a Pod may land on and its quotas."""
