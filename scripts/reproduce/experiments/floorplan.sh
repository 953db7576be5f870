# floorplan: sourced by scripts/reproduce.sh, which builds its `packages` (release) and calls run_floorplan.
packages+=(floorplan)

run_floorplan() {
  local inputs="5 15 20" runs="--warmup 1 --runs 3"
  if [ "$quick" = 1 ]; then inputs="5" runs="--runs 1"; fi
  for i in $inputs; do
    record floorplan "{\"input\":\"input.$i\",\"cutoff\":4}" \
      $bin/floorplan --input "examples/floorplan/inputs/input.$i" --cutoff 4 $runs
  done
}
