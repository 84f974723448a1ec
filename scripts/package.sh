#!/usr/bin/env bash
# make package: the Lambda zips that infra/ deploys, target/lambda/<function>/bootstrap.zip
# ($CARGO_TARGET_DIR/lambda when set), for the provided.al2023 runtime.
#
# cargo-lambda and zig come from PyPI (the cargo-lambda and ziglang packages:
# prebuilt, no toolchain download) into .work/cargo-lambda, once. zig links
# against the glibc version named in the target triple, so the binaries run on
# provided.al2023 (glibc 2.34) whatever this machine's glibc is;
# scripts/check-lambda-zips.sh verifies that (make package-check).
#
#   LAMBDA_ARCH=x86_64|arm64   the Lambda architecture (default x86_64, the module's default)
#   LAMBDA_GLIBC=2.34          the newest glibc the binaries may need
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work=${LIVE_CI_WORK:-$PWD/.work}
root=$work/cargo-lambda
CARGO_LAMBDA_VERSION=${CARGO_LAMBDA_VERSION:-1.9.2}
ZIGLANG_VERSION=${ZIGLANG_VERSION:-0.17.1}
glibc=${LAMBDA_GLIBC:-2.34}
case ${LAMBDA_ARCH:-x86_64} in
  x86_64 | amd64) triple=x86_64-unknown-linux-gnu ;;
  arm64 | aarch64) triple=aarch64-unknown-linux-gnu ;;
  *) echo "package: unknown LAMBDA_ARCH ${LAMBDA_ARCH} (x86_64 or arm64)" >&2; exit 2 ;;
esac

if [ "$("$root/bin/cargo-lambda" lambda --version 2>/dev/null | awk '{print $2}')" != "$CARGO_LAMBDA_VERSION" ] \
  || ! "$root/bin/python3" -m ziglang version >/dev/null 2>&1; then
  echo "package: installing cargo-lambda $CARGO_LAMBDA_VERSION and zig (ziglang $ZIGLANG_VERSION) into $root" >&2
  rm -rf "$root"
  python3 -m venv "$root"
  "$root/bin/pip" install --quiet --disable-pip-version-check \
    "cargo-lambda==$CARGO_LAMBDA_VERSION" "ziglang==$ZIGLANG_VERSION"
fi
# cargo-lambda finds zig as `python3 -m ziglang` of the venv.
export PATH=$root/bin:$PATH
if ! rustup target list --installed 2>/dev/null | grep -qx "$triple"; then
  rustup target add "$triple"
fi

# Every Lambda binary of the workspace (their bin names are the function names).
bins=()
for bin in receiver trigger-sf approval-request approval-response notifier; do
  if cargo metadata --no-deps --format-version 1 | grep -q "\"name\":\"$bin\",\"src_path\""; then
    bins+=(--bin "$bin")
  else
    echo "package: no binary $bin in the workspace" >&2
    exit 1
  fi
done
# cargo-lambda's own release tuning (one codegen unit, LTO) would double the
# build on a 2-core machine for little gain; stripped symbols keep the zips small.
CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols \
  cargo lambda build --release --locked --disable-optimizations --compiler cargo-zigbuild \
  --target "$triple.$glibc" --output-format zip "${bins[@]}"
out=${CARGO_TARGET_DIR:-target}/lambda
ls -l "$out"/*/bootstrap.zip
