# client-curve: sourced by scripts/reproduce.sh, which calls run_client_curve.
# Cppless's client curve (figure 5.19): invocation latency against invocations at once, for the
# local, http and lambda backends; a bench of ferry-tests, built here with the release profile.

run_client_curve() {
  local size=()
  if [ "$quick" = 1 ]; then size=(--quick); fi
  # A bench runs in its package's folder: the path is absolute.
  cargo bench --profile release --locked --quiet -p ferry-tests --bench client_curve -- \
    "${size[@]}" --out "$PWD/$data/tmp/client-curve.jsonl" >/dev/null
}
