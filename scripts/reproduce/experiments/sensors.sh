# sensors: sourced by scripts/reproduce.sh, which builds its `packages` (release) and calls run_sensors.
packages+=(sensors)

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
