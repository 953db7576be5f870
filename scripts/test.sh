#!/usr/bin/env bash
# The whole test suite: formatting, lints, docs and every test of the workspace.
# CI runs exactly this (.ci/run); so does a developer on a fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet

# The Lambda runtime's tests run against cargo-lambda's emulator of the Runtime API (a prebuilt
# binary on PyPI).
if ! cargo lambda --version >/dev/null 2>&1; then
  echo "== installing cargo-lambda"
  python3 -m pip install --quiet --disable-pip-version-check "cargo-lambda==1.9.2"
  command -v pyenv >/dev/null 2>&1 && pyenv rehash
fi

echo "== cargo test"
cargo test --workspace --locked
