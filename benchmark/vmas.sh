#!/usr/bin/env bash
# Continuous actions (issue 48): mappo.py and ippo.py on VMAS navigation and balance, 3 seeds, beside BenchMARL's MAPPO
# and IPPO run on this machine with their own configs at the same env steps. Budget: BenchMARL's default max_n_frames,
# 3M env steps (TOTAL_TIMESTEPS overrides it for both sides).
#   bash benchmark/vmas.sh             # ours, resumable as benchmark/mappo.sh is: benchmark/results/vmas_{mappo,ippo}
#   bash benchmark/vmas.sh keep        # before a session ends: stop the runs (Ctrl-C), then this, then commit kept/
# Both modes end with benchmark/report/vmas_compare.py (benchmark/results/vmas_compare: the README's table and curves).
#   bash benchmark/vmas.sh benchmarl   # BenchMARL's runs, one at a time: benchmark/results/vmas_benchmarl/
#                                      # <task>_<algorithm>_seed<N>.json.gz (commit them); finished ones are skipped. A run
#                                      # saves kept/<name>.pt every 30000 frames and goes on from it when started again:
#                                      # before a session ends, stop it (pkill -f 'vmas.sh benchmarl', then pkill -f
#                                      # benchmarl_baseline.py: the loop first) and commit kept/. BENCHMARL_PYTHON: its
#                                      # venv's python (see benchmark/benchmarl/benchmarl_baseline.py, which says what a
#                                      # resumed run keeps); ALGORITHMS, TASKS, SEEDS pick runs.
#   BENCHMARL_CONFIG=fine_tuned bash benchmark/vmas.sh benchmarl   # BenchMARL's VMAS-tuned config (issue 113 item 2:
#                                      # benchmarl_baseline.py --config fine_tuned), MAPPO only unless ALGORITHMS says
#                                      # otherwise, at its own budget of 10M frames (TOTAL_TIMESTEPS overrides it) and
#                                      # evaluation (200 episodes every 120,000 frames), saved every 120,000 frames:
#                                      # benchmark/results/vmas_benchmarl_fine_tuned/ (measured: ~400 s a batch of
#                                      # 60,000 beside two other runs, 155 frames/s: ~18 h a run at that rate). Stopped
#                                      # (pkill as above), its loop never reaches vmas_compare.py: run that and
#                                      # benchmark/report/update_readme.py before committing kept/ (unfinished runs shown)
{  # bash reads the whole script before running it, so an edit made while a long run goes on cannot shift what runs
set -euo pipefail
cd "$(dirname "$0")/.."
ORIGINAL_TOTAL=${TOTAL_TIMESTEPS:-}  # fine_tuned: its own 10M unless given
export TOTAL_TIMESTEPS=${TOTAL_TIMESTEPS:-3000000}
if [ "${1:-}" = benchmarl ]; then
  out=benchmark/results/vmas_benchmarl python=${BENCHMARL_PYTHON:-/work/benchmarl-venv/bin/python} failed=0
  config=${BENCHMARL_CONFIG:-base} algorithms=${ALGORITHMS:-mappo ippo} frames=$TOTAL_TIMESTEPS every=30000
  case $config in
    base) ;;
    fine_tuned) out=${out}_fine_tuned algorithms=${ALGORITHMS:-mappo} frames=${ORIGINAL_TOTAL:-10000000} every=120000 ;;
    *) echo "BENCHMARL_CONFIG: base or fine_tuned, not $config" >&2; exit 2 ;;
  esac
  . benchmark/require_python.sh && require_python matplotlib  # the figure comes after hours of runs
  mkdir -p "$out/kept"
  for task in ${TASKS:-navigation balance}; do
    for algorithm in $algorithms; do
      for seed in ${SEEDS:-1 2 3}; do
        name=${task}_${algorithm}_seed$seed
        [ ! -e "$out/$name.json.gz" ] || { echo "done already: $out/$name.json.gz" >&2; continue; }
        "$python" benchmark/benchmarl/benchmarl_baseline.py --algorithm "$algorithm" --task "$task" --seed "$seed" \
          --config "$config" --max-n-frames "$frames" --checkpoint "$out/kept/$name.pt" --checkpoint-interval "$every" \
          --out "$out/$name.json.tmp" \
          >>"$out/$name.log" 2>&1 && gzip -9n "$out/$name.json.tmp" && mv "$out/$name.json.tmp.gz" "$out/$name.json.gz" \
          && rm -f "$out/kept/$name.pt" \
          || { echo "failed: $name, see $out/$name.log" >&2; failed=1; }
      done
    done
  done
  ${PYTHON:-python} benchmark/report/vmas_compare.py || failed=1
  exit $failed
fi
for script in mappo ippo; do
  ENV_IDS="vmas/navigation vmas/balance" SCRIPT=$script.py OUT=benchmark/results/vmas_$script bash benchmark/mappo.sh "$@"
done
[ -n "${1:-}" ] || ${PYTHON:-python} benchmark/report/vmas_compare.py
exit  # before bash reads past the brace
}
