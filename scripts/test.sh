#!/usr/bin/env bash
# The whole test suite: formatting, lints, docs and every test of the workspace.
# CI runs exactly this (.ci/run); so does a developer on a fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."

# The suite builds the workspace, trybuild's copy of it, generated crates and release fixtures:
# without debug info and incremental caches that is a third of the disk (CI machines have little).
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=0
export CARGO_PROFILE_RELEASE_DEBUG=0

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo clippy on each of ferry's features alone (warnings are errors)"
for feature in "" local http openwhisk lambda store "openwhisk,store" web state progress; do
  cargo clippy --package ferry --no-default-features --features "$feature" --locked --quiet -- -D warnings
done

echo "== cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet

# The Lambda runtime's tests run against cargo-lambda's emulator of the Runtime API (a prebuilt
# binary on PyPI).
if ! cargo lambda --version >/dev/null 2>&1; then
  echo "== installing cargo-lambda"
  python3 -m pip install --quiet --disable-pip-version-check "cargo-lambda==1.9.2"
  command -v pyenv >/dev/null 2>&1 && pyenv rehash
fi

# `ferry build`'s tests read the OCI image with skopeo (a Debian package).
if ! command -v skopeo >/dev/null 2>&1; then
  echo "== installing skopeo"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq skopeo >/dev/null
fi

# `ferry::state`'s tests start their own redis-server on loopback (a Debian package); nothing
# needs to be running.
if ! command -v redis-server >/dev/null 2>&1; then
  echo "== installing redis-server"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server >/dev/null
fi

# The OpenWhisk tests pull images from a real OCI registry on loopback: Debian's reference
# registry (`ferry_tests::registry`), started by the tests themselves.
if ! [ -x /usr/bin/docker-registry ]; then
  echo "== installing docker-registry"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq docker-registry >/dev/null
fi

# The multi-host test (`crates/ferry-tests/tests/across_hosts.rs`) builds its hosts from network
# namespaces with iproute2's `ip` (a Debian package), as root; under CI (`CI` set) it fails rather
# than skips where it cannot.
if ! command -v ip >/dev/null 2>&1; then
  echo "== installing iproute2"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq iproute2 >/dev/null
fi

# `ferry deploy --platform lambda`'s tests run against moto's server, a real implementation of
# the Lambda and IAM APIs (PyPI `moto[server]`), started by the tests themselves on loopback.
python="$(python3 -c 'import sys; print(sys.executable)')"
if ! "$python" -c 'import moto.server, flask, flask_cors' >/dev/null 2>&1; then
  echo "== installing moto[server]"
  "$python" -m pip install --quiet --disable-pip-version-check "moto[server]==5.2.1"
  command -v pyenv >/dev/null 2>&1 && pyenv rehash
fi
export FERRY_TEST_PYTHON="$python"

# The Knative tests validate the Services `ferry deploy --platform knative` writes against Knative
# Serving's CRD schema and Kubernetes' OpenAPI spec, which they read from those projects' Go
# modules (`go mod download`, from the Go module proxy, into the module cache).
if ! command -v go >/dev/null 2>&1; then
  echo "== installing go"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq golang-go >/dev/null
fi

# `ferry deploy --platform knative --apply`'s tests apply Services to a real Kubernetes API server
# on loopback: kube-apiserver, built once per machine from Kubernetes' Go modules (the Go module
# proxy; k8s.io/kubernetes replaces its staging modules with directories its module lacks, so a
# module of our own requires their releases instead), over etcd from Debian's etcd-server.
if ! command -v etcd >/dev/null 2>&1; then
  echo "== installing etcd-server"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq etcd-server >/dev/null
fi
kubernetes=v1.32.4
export FERRY_TEST_KUBE_APISERVER="${XDG_CACHE_HOME:-$HOME/.cache}/ferry-tests/kube-apiserver-$kubernetes"
if ! [ -x "$FERRY_TEST_KUBE_APISERVER" ]; then
  echo "== building kube-apiserver $kubernetes (once per machine)"
  module="$(mktemp -d)"
  gomod="$(go mod download -json "k8s.io/kubernetes@$kubernetes" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  {
    printf 'module ferry.test/kube-apiserver\n\ngo 1.23\n\nrequire k8s.io/kubernetes %s\n\n' "$kubernetes"
    sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/.*#replace \1 => \1 v0'"${kubernetes#v1}"'#p' "$gomod"
  } >"$module/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver"\n' >"$module/tools.go"
  mkdir -p "$(dirname "$FERRY_TEST_KUBE_APISERVER")"
  # Its build cache (2 GB) is of no use once the binary is built.
  (cd "$module" && export GOCACHE="$module/cache" && go mod tidy &&
    go build -o "$FERRY_TEST_KUBE_APISERVER.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$FERRY_TEST_KUBE_APISERVER.tmp" "$FERRY_TEST_KUBE_APISERVER"
  rm -rf "$module"
fi

# The decoders' property tests (`robustness` modules) feed this many hostile inputs each; a longer
# run: PROPTEST_CASES=20000 cargo test -p ferry-core -p ferry --lib robustness
export PROPTEST_CASES="${PROPTEST_CASES:-2000}"

echo "== cargo test"
cargo test --workspace --locked

# The accounts experiment loads its service with wrk (a Debian package).
if ! command -v wrk >/dev/null 2>&1; then
  echo "== installing wrk"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq wrk >/dev/null
fi

# The experiments build in release (5 GB). On CI, whose machines have little disk, or wherever less
# than 20 GB is free, the tests' build goes first: the debug profile, trybuild's copy, generated
# crates and fixtures (8 GB).
free_kib=$(df -Pk target | awk 'NR == 2 { print $4 }')
if [ -n "${CI:-}" ] || [ "$free_kib" -lt $((20 * 1024 * 1024)) ]; then
  echo "== removing the tests' build ($((free_kib / 1024 / 1024)) GB free)"
  cargo clean --profile dev --quiet
  rm -rf target/tests target/ferry-new target/x86_64-unknown-linux-gnu target/tmp
fi

# The experiments of docs/benchmarks.md at a small size, into target/reproduce/: the harness that
# regenerates the docs keeps working.
echo "== scripts/reproduce.sh --quick"
bash scripts/reproduce.sh --quick
