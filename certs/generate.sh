#!/usr/bin/env bash
# Create the CA and serving certificate for the self-signed overlay, then print how to apply it.
#   certs/generate.sh [--pod-tailor-namespace NS] [--service NAME] [--days N] ...   (`pod-tailor certs`'s)
# Uses `pod-tailor` from PATH, else the repository's virtualenv (scripts/_venv.sh creates it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v pod-tailor >/dev/null 2>&1; then
  source "$root/scripts/_venv.sh" ""  # no extras; without an argument `source` would pass ours
fi
exec pod-tailor certs --out "$root/manifests/overlays/self-signed/generated" "$@"
