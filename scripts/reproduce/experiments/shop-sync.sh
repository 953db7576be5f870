# shop-sync: sourced by scripts/reproduce.sh, which builds its `packages` (release) and calls run_shop_sync.
packages+=(shop-sync)

run_shop_sync() {
  # The sizes of docs/benchmarks.md; quick: two small counts and one throttled run of 1 s.
  local models=250,500,1000,2000 throttled=50,100,200 warm_up=250
  if [ "$quick" = 1 ]; then models=40,80 throttled=10 warm_up=20; fi
  # Every count through every runner twice, at most 256 syncs in flight and all at once; the
  # runs' lines go to stderr, the Markdown tables on stdout are the renderer's to write.
  $bin/shop-sync bench --models "$models" --throttled-models "$throttled" --warm-up "$warm_up" \
    --workers 2 --dispatch bounded,all-at-once --in-flight 256 \
    --csv "$data/tmp/shop-sync.csv" --all-at-once-csv "$data/tmp/shop-sync-all-at-once.csv" \
    --throttled-csv "$data/tmp/shop-sync-throttled.csv" >/dev/null
}
