#!/usr/bin/env bash
# Reruns the experiments behind docs/benchmarks.md and regenerates its measured tables, their raw
# data (docs/data/) and their plots (docs/*.png).
#
#   scripts/reproduce.sh [--quick] [EXPERIMENT...]
#
# Each experiment is scripts/reproduce/experiments/NAME.sh (how it runs) and
# scripts/reproduce/renderers/NAME.py (what it writes); `--list` names them. All run by default.
# --quick runs each at a small size and writes everything under target/reproduce/ (a copy of
# docs/benchmarks.md included), leaving docs/ as it is: CI runs it so the harness cannot rot.
# docs/benchmarks.md states how long each experiment's last full run took.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
experiments_dir=scripts/reproduce/experiments

# The order of a full run; an experiment not named here runs after these.
order=(pi nqueens fib floorplan raytracer client-curve knapsack sensors sensors-stages shop-sync
  accounts hexaville benches)
all=()
for name in "${order[@]}"; do
  if [ -f "$experiments_dir/$name.sh" ]; then all+=("$name"); fi
done
for file in "$experiments_dir"/*.sh; do
  name=$(basename "$file" .sh)
  case " ${all[*]} " in *" $name "*) ;; *) all+=("$name") ;; esac
done

quick=0
experiments=()
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --list)
      echo "${all[*]}"
      exit 0
      ;;
    -h | --help)
      sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "error: unknown option $arg" >&2
      exit 2
      ;;
    *) experiments+=("$arg") ;;
  esac
done
if [ ${#experiments[@]} -eq 0 ]; then
  experiments=("${all[@]}")
fi
packages=()
for experiment in "${experiments[@]}"; do
  if [ ! -f "$experiments_dir/$experiment.sh" ]; then
    echo "error: no experiment named $experiment (there are: ${all[*]})" >&2
    exit 2
  fi
  # shellcheck source=/dev/null
  source "$experiments_dir/$experiment.sh"
done

if [ "$quick" = 1 ]; then
  data=target/reproduce/data
  plots=target/reproduce
  document=target/reproduce/benchmarks.md
else
  data=docs/data
  plots=docs
  document=docs/benchmarks.md
fi
rm -rf "$data/tmp"
mkdir -p "$data/tmp" "$plots"
started=$(date +%s)

# The plots need matplotlib.
python="$(python3 -c 'import sys; print(sys.executable)')"
if ! "$python" -c 'import matplotlib' >/dev/null 2>&1; then
  echo "== installing matplotlib"
  "$python" -m pip install --quiet --disable-pip-version-check "matplotlib==3.10.7"
fi

if [ ${#packages[@]} -gt 0 ]; then
  echo "== building the examples (release)"
  mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
  cargo build --release --locked --quiet "${packages[@]/#/-p}"
fi
bin=target/release
export FERRY_PROGRESS=never

# One JSON record per line: the run's parameters, then the example's own JSON summary.
record() {
  local file=$1 parameters=$2
  shift 2
  local summary
  summary=$("$@" --json | tail -n 1)
  printf '{"parameters":%s,"summary":%s}\n' "$parameters" "$summary" >>"$data/tmp/$file.jsonl"
}

shopt -s nullglob
durations=()
for experiment in "${experiments[@]}"; do
  echo "== $experiment"
  experiment_started=$(date +%s)
  "run_${experiment//-/_}"
  # Only now, all its runs done, do an experiment's files replace the last ones.
  for file in "$data/tmp/$experiment"*.jsonl "$data/tmp/$experiment"*.csv "$data/tmp/$experiment"*.md; do
    mv -f "$file" "$data/"
  done
  durations+=("$experiment=$(($(date +%s) - experiment_started))")
  echo "   $(($(date +%s) - experiment_started)) s"
done
rm -rf "$data/tmp"

if [ "$quick" = 1 ]; then
  cp docs/benchmarks.md "$document"
  if [ -f docs/data/runs.json ] && [ ! -f "$data/runs.json" ]; then cp docs/data/runs.json "$data/"; fi
fi
quick_flag=()
if [ "$quick" = 1 ]; then quick_flag=(--quick); fi
"$python" scripts/reproduce/render.py --data "$data" --document "$document" \
  --plots "$plots" "${quick_flag[@]}" "${durations[@]}"
echo "== done in $(($(date +%s) - started)) s: $document"
