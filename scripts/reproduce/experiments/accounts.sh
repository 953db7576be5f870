# accounts: sourced by scripts/reproduce.sh, which builds its `packages` (release) and calls run_accounts.
packages+=(accounts)

run_accounts() {
  # The article's users as wrk connections; a request unanswered within 2 s is a timeout.
  local connections=20,50,100,200,300 seconds=6
  if [ "$quick" = 1 ]; then connections=20 seconds=1; fi
  if ! command -v wrk >/dev/null 2>&1; then
    echo "error: the accounts experiment loads the service with wrk: install Debian's wrk (apt-get install wrk)" >&2
    exit 1
  fi
  # What a client pays: each route in each format fetched, then decoded 20 times after 3 warm-ups.
  $bin/accounts-load decode --runs 20 --warm-up 3 >"$data/tmp/accounts-decode.jsonl"
  $bin/accounts-load wrk --connections "$connections" --seconds "$seconds" --timeout 2 \
    >"$data/tmp/accounts-load.jsonl"
}
