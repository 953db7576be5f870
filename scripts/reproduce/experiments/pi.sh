# pi: sourced by scripts/reproduce.sh, which builds its `packages` (release) and calls run_pi.
packages+=(pi)

run_pi() {
  local samples=500000000 tasks="1 2 4 8 16 32 64 128 256 512 1024 2048" runs="--warmup 1 --runs 3"
  if [ "$quick" = 1 ]; then samples=2000000 tasks="1 4 16" runs="--runs 1"; fi
  for t in $tasks; do
    record pi "{\"samples\":$samples,\"tasks\":$t}" $bin/pi --samples "$samples" --tasks "$t" $runs
  done
}
