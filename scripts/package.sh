#!/usr/bin/env bash
# make package: the Lambda zips that infra/ deploys, target/lambda/<function>/bootstrap.zip,
# built by cargo-lambda (installed from crates.io into .work/cargo-lambda once).
# The host's compiler builds them (--compiler cargo, no zig): run it on a
# machine of the Lambda architecture (LAMBDA_ARCH=x86_64 or arm64), glibc
# compatible with provided.al2023.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work=${LIVE_CI_WORK:-$PWD/.work}
root=$work/cargo-lambda
CARGO_LAMBDA_VERSION=${CARGO_LAMBDA_VERSION:-1.9.2}
arch=${LAMBDA_ARCH:-$(uname -m)}
case $arch in
  x86_64 | amd64) arch_flag=--x86-64 ;;
  arm64 | aarch64) arch_flag=--arm64 ;;
  *) echo "package: unknown LAMBDA_ARCH $arch (x86_64 or arm64)" >&2; exit 2 ;;
esac

if [ "$("$root/bin/cargo-lambda" lambda --version 2>/dev/null | awk '{print $2}')" != "$CARGO_LAMBDA_VERSION" ]; then
  echo "package: installing cargo-lambda $CARGO_LAMBDA_VERSION into $root"
  cargo install --locked --root "$root" cargo-lambda --version "$CARGO_LAMBDA_VERSION"
fi
export PATH=$root/bin:$PATH

# Every Lambda binary of the workspace; approval-request and approval-response
# join when their crates land (their bin names are the function names).
bins=()
for bin in receiver trigger-sf approval-request approval-response; do
  if cargo metadata --no-deps --format-version 1 | grep -q "\"name\":\"$bin\",\"src_path\""; then
    bins+=(--bin "$bin")
  else
    echo "package: no binary $bin in the workspace yet, skipped" >&2
  fi
done
cargo lambda build --release --locked --compiler cargo "$arch_flag" --output-format zip "${bins[@]}"
ls -l target/lambda/*/bootstrap.zip
