"""The Kubernetes adapter: finding the API server, list+watch of collections, the policy ConfigMap,
and turning what is watched into a `ClusterSnapshot`. The refresher that runs it is
`webhook.refreshers.cluster`."""
