# sensors-stages: sourced by scripts/reproduce.sh, which builds its `packages` (release) and calls
# run_sensors_stages. Dyninka's remaining figures: the time between services, each stage's body
# against the hop it adds, and throughput over time, chained against orchestrated.
packages+=(sensors)

run_sensors_stages() {
  local clients=10 seconds=60 warm_up=2 every=20
  if [ "$quick" = 1 ]; then clients=2 seconds=0.5 warm_up=0 every=1; fi
  # As Dyninka measured: a connection per request, each service on one CPU of its own. Every
  # flow runs the timed twin; one timed flow in $every per client is written.
  $bin/sensors load --clients "$clients" --seconds "$seconds" --warm-up "$warm_up" \
    --modes chained,orchestrated --keep-alive off --one-cpu-per-service \
    --stage-timings "$data/tmp/sensors-stages-timings.csv" --timings-every "$every" \
    --timeline "$data/tmp/sensors-stages-timeline.csv" --bucket-ms 100 \
    --csv "$data/tmp/sensors-stages.csv" >/dev/null
}
