# Sourced by the launchers (mappo.sh, smax_hard_10m.sh, vmas.sh): a PYTHON outside the repo's venv fails only hours
# later (the figures) or misreads every checkpoint as unreadable, so each launcher checks it before anything runs:
#   require_python MODULES   # e.g. "torch, matplotlib": exits 2, saying what to do, when PYTHON cannot import them
#   require_python MODULES failed   # a python that imports them has failed already (mappo.sh's checkpoint reader)
require_python() {
  if [ "${2:-}" != failed ] && "${PYTHON:-python}" -c "import $1" 2>/dev/null; then return; fi
  echo "error: PYTHON (${PYTHON:-python}) lacks this repo's requirements ($1): activate its .venv or set PYTHON" >&2 && exit 2
}
