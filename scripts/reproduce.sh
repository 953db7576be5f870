#!/usr/bin/env bash
# Reruns the experiments behind docs/benchmarks.md and regenerates its measured tables, their raw
# data (docs/data/) and their plots (docs/*.png).
#
#   scripts/reproduce.sh [--quick] [EXPERIMENT...]
#
# Experiments: pi nqueens fib floorplan raytracer knapsack sensors (all, by default).
# --quick runs each at a small size and writes everything under target/reproduce/ (a copy of
# docs/benchmarks.md included), leaving docs/ as it is: CI runs it so the harness cannot rot.
# The full run takes about 50 minutes on the 2-vCPU machine of docs/benchmarks.md. It needs
# redis-server (knapsack's shared bound) and installs matplotlib (the plots) when missing.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

quick=0
experiments=()
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    -h | --help)
      sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "error: unknown option $arg" >&2
      exit 2
      ;;
    *) experiments+=("$arg") ;;
  esac
done
all=(pi nqueens fib floorplan raytracer knapsack sensors)
if [ ${#experiments[@]} -eq 0 ]; then
  experiments=("${all[@]}")
fi
for experiment in "${experiments[@]}"; do
  case " ${all[*]} " in
    *" $experiment "*) ;;
    *)
      echo "error: no experiment named $experiment (there are: ${all[*]})" >&2
      exit 2
      ;;
  esac
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

echo "== building the examples (release)"
cargo build --release --locked --quiet -p pi -p nqueens -p fib -p floorplan -p raytracer -p knapsack -p sensors
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

run_pi() {
  local samples=500000000 tasks="1 2 4 8 16 32 64 128 256 512 1024 2048" runs="--warmup 1 --runs 3"
  if [ "$quick" = 1 ]; then samples=2000000 tasks="1 4 16" runs="--runs 1"; fi
  for t in $tasks; do
    record pi "{\"samples\":$samples,\"tasks\":$t}" $bin/pi --samples "$samples" --tasks "$t" $runs
  done
}

run_nqueens() {
  local sizes="14 15 16 17 18" runs="--warmup 1 --runs 3"
  if [ "$quick" = 1 ]; then sizes="8 10" runs="--runs 1"; fi
  for n in $sizes; do
    record nqueens "{\"n\":$n,\"tasks\":64}" $bin/nqueens --n "$n" --tasks 64 $runs
  done
}

run_fib() {
  local sizes="25 30 35" runs="--warmup 2 --runs 11"
  if [ "$quick" = 1 ]; then sizes="15 20" runs="--runs 3"; fi
  for n in $sizes; do
    record fib "{\"n\":$n,\"tasks\":100}" $bin/fib --n "$n" --tasks 100 $runs
  done
}

run_floorplan() {
  local inputs="5 15 20" runs="--warmup 1 --runs 3"
  if [ "$quick" = 1 ]; then inputs="5" runs="--runs 1"; fi
  for i in $inputs; do
    record floorplan "{\"input\":\"input.$i\",\"cutoff\":4}" \
      $bin/floorplan --input "examples/floorplan/inputs/input.$i" --cutoff 4 $runs
  done
}

run_raytracer() {
  local size=500 tiles="4 16 64 256 1024 2048"
  if [ "$quick" = 1 ]; then size=64 tiles="4 16"; fi
  for t in $tiles; do
    record raytracer "{\"size\":$size,\"tiles\":$t}" $bin/raytracer --width "$size" --height "$size" \
      --tasks "$t" --warmup 1 --latencies --out "$data/tmp/raytracer.png"
  done
}

run_knapsack() {
  local runs=("strongly-correlated 80 3" "strongly-correlated 100 1" "even-odd 30 7")
  if [ "$quick" = 1 ]; then runs=("strongly-correlated 40 3"); fi
  # The best bound shared between tasks lives in a Redis of the run's own.
  local port=6390
  while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
  redis-server --port "$port" --save "" --appendonly no --daemonize yes >/dev/null
  trap 'redis-cli -p '"$port"' shutdown nosave >/dev/null 2>&1 || true' EXIT
  local waited=0
  until redis-cli -p "$port" ping >/dev/null 2>&1; do
    waited=$((waited + 1))
    if [ "$waited" -gt 100 ]; then
      echo "error: redis-server on port $port did not answer within 10 s" >&2
      exit 1
    fi
    sleep 0.1
  done
  export FERRY_REDIS_URL="redis://127.0.0.1:$port"
  for run in "${runs[@]}"; do
    read -r family items seed <<<"$run"
    for split in 20 0; do
      record knapsack "{\"family\":\"$family\",\"items\":$items,\"seed\":$seed,\"split_after_ms\":$split}" \
        $bin/knapsack --family "$family" --items "$items" --seed "$seed" --tasks 64 --split-after-ms "$split" --shared
    done
  done
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  trap - EXIT
}

run_sensors() {
  local clients=1,5,10,50 seconds=60 warm_up=2
  if [ "$quick" = 1 ]; then clients=2 seconds=0.5 warm_up=0; fi
  local common=(load --clients "$clients" --seconds "$seconds" --warm-up "$warm_up")
  # As Dyninka measured: a connection per request, each service on one CPU of its own.
  $bin/sensors "${common[@]}" --modes chained,orchestrated --keep-alive off --one-cpu-per-service \
    --csv "$data/tmp/sensors-dyninka.csv" >/dev/null
  # Keep-alive connections, every process on both CPUs.
  $bin/sensors "${common[@]}" --csv "$data/tmp/sensors-keep-alive.csv" >/dev/null
}

shopt -s nullglob
for experiment in "${experiments[@]}"; do
  echo "== $experiment"
  experiment_started=$(date +%s)
  "run_${experiment//-/_}"
  # Only now, all its runs done, do an experiment's files replace the last ones.
  for file in "$data/tmp/$experiment"*.jsonl "$data/tmp/$experiment"*.csv; do
    mv -f "$file" "$data/"
  done
  echo "   $(($(date +%s) - experiment_started)) s"
done
rm -rf "$data/tmp"

if [ "$quick" = 1 ]; then
  cp docs/benchmarks.md "$document"
fi
quick_flag=()
if [ "$quick" = 1 ]; then quick_flag=(--quick); fi
"$python" scripts/reproduce/render.py --data "$data" --document "$document" \
  --plots "$plots" --seconds "$(($(date +%s) - started))" "${quick_flag[@]}" "${experiments[@]}"
echo "== done in $(($(date +%s) - started)) s: $document"
