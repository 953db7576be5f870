# knapsack: sourced by scripts/reproduce.sh, which builds its `packages` (release) and calls run_knapsack.
packages+=(knapsack)

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
