"""pod-tailor: a mutating admission webhook that fills in what a Pod's author left out."""

__version__ = "0.1.0"
PREFIX = "pod-tailor.io/"
