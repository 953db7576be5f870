# benches: sourced by scripts/reproduce.sh, which builds its `packages` (release) and calls
# run_benches. The benches behind docs/benchmarks.md's tables that used to be copied by hand:
# invoke (twice in a full run, then with TOKIO_WORKER_THREADS=1), fan_out_memory, lambda,
# lambda_codec, lambda_shared, lambda_client, openwhisk (ferry-tests), codecs (ferry) and the
# raytracer's raytracer-bench. Each prints a Markdown report and writes it to FERRY_BENCH_OUT
# (crates/ferry-tests/benches/report/mod.rs), here $data/tmp/benches-NAME.md. A full run builds
# them with the `bench` profile, as `cargo bench` does; --quick with `release`, so that CI does
# not pay for fat LTO. lambda_codec and lambda_shared need cargo-lambda; lambda_shared also moto
# (`pip install 'moto[server]'`).
packages+=(raytracer)

run_benches() {
  local size=() profile=bench out executables
  if [ "$quick" = 1 ]; then size=(--quick) profile=release; fi
  case "$data" in /*) out="$data/tmp" ;; *) out="$PWD/$data/tmp" ;; esac
  # Built once, then each executable run as `cargo bench` runs it: in its package's folder, with
  # `--bench`. (One cargo call instead of ten, each of which could wait for the build lock.)
  executables=$(cargo bench --profile "$profile" --locked --quiet -p ferry-tests -p ferry --no-run \
    --message-format=json | "$python" -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "bench" in m["target"]["kind"]:
        print(m["target"]["name"], m["manifest_path"].rsplit("/", 1)[0], m["executable"])')
  bench() {
    local name=$1 target=$2 dir exe
    shift 2
    read -r _ dir exe < <(grep "^$target " <<<"$executables" || true)
    if [ -z "${exe:-}" ]; then
      echo "error: cargo built no bench named $target" >&2
      exit 1
    fi
    echo "   $name"
    (cd "$dir" && FERRY_BENCH_OUT="$out/benches-$name.md" "$@" "$exe" --bench "${size[@]}" >/dev/null)
  }
  bench invoke invoke env
  if [ "$quick" = 0 ]; then
    # The table shows two runs of the default runtimes.
    bench invoke-again invoke env
  fi
  bench invoke-1thread invoke env TOKIO_WORKER_THREADS=1
  bench fan-out-memory fan_out_memory env
  bench lambda lambda env
  bench lambda-codec lambda_codec env
  bench lambda-shared lambda_shared env
  bench lambda-client lambda_client env
  bench openwhisk openwhisk env
  bench codecs codecs env
  echo "   raytracer"
  FERRY_BENCH_OUT="$out/benches-raytracer.md" "$bin/raytracer-bench" "${size[@]}" >/dev/null
}
