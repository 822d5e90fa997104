"""The engine run on manifests rather than admission requests: reading Pods out of manifests,
the offline preview, and the cluster's own dry run (kubectl create --dry-run=server)."""
