# shop-sync: sourced by scripts/reproduce.sh, which builds its `packages` (release) and calls run_shop_sync.
packages+=(shop-sync)

run_shop_sync() {
  # The sizes of docs/benchmarks.md; quick: two small counts and one throttled run of 1 s.
  local models=250,500,1000,2000 throttled=50,100,200 warm_up=250 repeats=5 run
  if [ "$quick" = 1 ]; then models=40,80 throttled=10 warm_up=20 repeats=2; fi
  # Unthrottled, every count through every runner, at most 256 syncs in flight and all at once,
  # `repeats` times (a run takes seconds, and one run's ratios move by a third between runs); the
  # rate-limited runs, which take minutes and move little, once. The runs' lines go to stderr,
  # the Markdown tables on stdout are the renderer's to write.
  for run in $(seq 1 "$repeats"); do
    if [ "$run" -gt 1 ]; then throttled=0; fi
    $bin/shop-sync bench --models "$models" --throttled-models "$throttled" --warm-up "$warm_up" \
      --workers 2 --dispatch bounded,all-at-once --in-flight 256 \
      --csv "$data/tmp/shop-sync-bounded-$run.csv" \
      --all-at-once-csv "$data/tmp/shop-sync-all-at-once-$run.csv" \
      --throttled-csv "$data/tmp/shop-sync-throttled.csv" >/dev/null
  done
}
