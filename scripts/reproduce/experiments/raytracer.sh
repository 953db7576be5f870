# raytracer: sourced by scripts/reproduce.sh, which builds its `packages` (release) and calls run_raytracer.
packages+=(raytracer)

run_raytracer() {
  local size=500 tiles="4 16 64 256 1024 2048"
  if [ "$quick" = 1 ]; then size=64 tiles="4 16"; fi
  for t in $tiles; do
    record raytracer "{\"size\":$size,\"tiles\":$t}" $bin/raytracer --width "$size" --height "$size" \
      --tasks "$t" --warmup 1 --latencies --out "$data/tmp/raytracer.png"
  done
}
