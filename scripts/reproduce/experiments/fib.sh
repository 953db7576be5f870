# fib: sourced by scripts/reproduce.sh, which builds its `packages` (release) and calls run_fib.
packages+=(fib)

run_fib() {
  local sizes="25 30 35" runs="--warmup 2 --runs 11"
  if [ "$quick" = 1 ]; then sizes="15 20" runs="--runs 3"; fi
  for n in $sizes; do
    record fib "{\"n\":$n,\"tasks\":100}" $bin/fib --n "$n" --tasks 100 $runs
  done
}
