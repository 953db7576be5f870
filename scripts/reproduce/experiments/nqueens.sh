# nqueens: sourced by scripts/reproduce.sh, which builds its `packages` (release) and calls run_nqueens.
packages+=(nqueens)

run_nqueens() {
  local sizes="14 15 16 17 18" runs="--warmup 1 --runs 3"
  if [ "$quick" = 1 ]; then sizes="8 10" runs="--runs 1"; fi
  for n in $sizes; do
    record nqueens "{\"n\":$n,\"tasks\":64}" $bin/nqueens --n "$n" --tasks 64 $runs
  done
}
