# hexaville: sourced by scripts/reproduce.sh, which builds its `packages` (release) and calls
# run_hexaville. Hexaville (seed 003) loaded `GET /` of a web app on Lambda with
# `wrk -t4 -c20 -d30s`; here wrk loads the web fixture on the Lambda runtime through
# lambda-gateway, a small API Gateway stand-in in front of an emulator: the AWS Runtime Interface
# Emulator when FERRY_RIE names one, else `cargo lambda watch`. Modes: ferry's warm runtime with
# payload 1.0 (REST API) and 2.0 (HTTP API) events, and a process started per invocation (2.0).
packages+=(ferry-tests)

run_hexaville() {
  local seconds=30
  if [ "$quick" = 1 ]; then seconds=1; fi
  local tool
  for tool in wrk curl; do
    if ! command -v "$tool" >/dev/null; then
      echo "error: hexaville needs $tool (apt-get install -y $tool)" >&2
      exit 1
    fi
  done
  local emulator rie=()
  if [ -n "${FERRY_RIE:-}" ]; then
    if [ ! -x "$FERRY_RIE" ]; then
      echo "error: FERRY_RIE=$FERRY_RIE is not an executable aws-lambda-rie" >&2
      exit 1
    fi
    emulator="aws-lambda-rie"
    rie=(--rie "$FERRY_RIE")
  else
    if ! emulator=$(cargo lambda --version 2>/dev/null | awk 'NR == 1 { print $2 }') || [ -z "$emulator" ]; then
      echo "error: hexaville needs FERRY_RIE=/path/to/aws-lambda-rie or cargo-lambda (pip install cargo-lambda)" >&2
      exit 1
    fi
    emulator="cargo lambda watch $emulator"
  fi
  local work
  work=$(mktemp -d)
  # wrk's own summary as one JSON line, as the accounts experiment reads it: requests, errors by
  # kind, latencies in µs.
  local summary_lua=examples/accounts/src/load/summary.lua
  local route=/hello/hexaville expected="hello hexaville"
  local run mode payload flags out err
  for run in "warm 1.0" "warm 2.0" "per-invocation 2.0"; do
    read -r mode payload <<<"$run"
    # Files of this run's own: the last run's announcement must not be read as this one's.
    out="$work/gateway-$mode-$payload.out" err="$work/gateway-$mode-$payload.err"
    flags=(--payload "$payload")
    if [ "$mode" = per-invocation ]; then flags+=(--per-invocation); fi
    $bin/lambda-gateway gateway --app $bin/web-fixture "${flags[@]}" "${rie[@]}" \
      >"$out" 2>"$err" &
    local gateway=$!
    trap 'kill '"$gateway"' 2>/dev/null || true' EXIT
    local waited=0
    until grep -q '^listening on ' "$out" 2>/dev/null; do
      waited=$((waited + 1))
      if [ "$waited" -gt 300 ] || ! kill -0 "$gateway" 2>/dev/null; then
        echo "error: lambda-gateway ($mode, payload $payload) did not start:" >&2
        cat "$err" >&2
        exit 1
      fi
      sleep 0.1
    done
    local url answer
    url=$(sed -n 's/^listening on //p' "$out")$route
    # The first request also starts the runtime: it must answer before wrk measures.
    if ! answer=$(curl -fsS --max-time 30 "$url") || [ "$answer" != "$expected" ]; then
      echo "error: GET $route through lambda-gateway ($mode, payload $payload, $emulator) answered: $answer" >&2
      cat "$err" >&2
      exit 1
    fi
    local summary
    summary=$(wrk -t4 -c20 -d"${seconds}s" --timeout 10s -s "$summary_lua" "$url" |
      sed -n 's/^ferry-wrk-summary //p')
    kill "$gateway" 2>/dev/null || true
    wait "$gateway" 2>/dev/null || true
    trap - EXIT
    if ! "$python" - "$summary" <<'PY'; then
import json, sys
summary = json.loads(sys.argv[1])
errors = {key: value for key, value in summary.items() if key.endswith(("_errors", "timeouts")) and value}
if summary["requests"] == 0 or errors:
    sys.exit(f"{summary['requests']} requests, errors {errors}")
PY
      echo "error: wrk through lambda-gateway ($mode, payload $payload, $emulator) had errors: $summary" >&2
      exit 1
    fi
    printf '{"parameters":{"mode":"%s","payload":"%s","emulator":"%s","route":"%s","threads":4,"connections":20,"seconds":%s},"summary":%s}\n' \
      "$mode" "$payload" "$emulator" "$route" "$seconds" "$summary" >>"$data/tmp/hexaville.jsonl"
    echo "   $mode, payload $payload: $summary"
  done
  rm -rf "$work"
}
