# Sourced by scripts/run and scripts/test: a local virtualenv with pod-tailor installed editable.
# Re-installs only when pyproject.toml changed since the last install.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${POD_TAILOR_VENV:-$root/.venv}"
extras="${1:-}"
stamp="$venv/.installed${extras:+-$extras}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
  "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$venv/bin/python" -m pip install -q -e "$root${extras:+[$extras]}"
  touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
