#!/usr/bin/env bash
# The release's Lambda assets (.github/workflows/release.yml): each
# <lambda-dir>/<function>/bootstrap.zip of `make package` copied to
# <out>/<function>.zip, and <out>/SHA256SUMS over them (sha256sum's format, so
# `sha256sum -c SHA256SUMS` checks a download). The five functions must all be
# there: a release missing one would deploy half a pipeline.
#   scripts/release-assets.sh <lambda-dir> <out>
set -euo pipefail
[ $# = 2 ] || { echo "usage: $0 <lambda-dir> <out>" >&2; exit 2; }
src=$1
out=$2
functions=(receiver trigger-sf approval-request approval-response notifier)
mkdir -p "$out"
for f in "${functions[@]}"; do
  zip="$src/$f/bootstrap.zip"
  [ -f "$zip" ] || { echo "release-assets: no $zip (run make package)" >&2; exit 1; }
  cp "$zip" "$out/$f.zip"
done
(cd "$out" && sha256sum "${functions[@]/%/.zip}" >SHA256SUMS)
echo "release-assets: $(wc -l <"$out/SHA256SUMS") zips and SHA256SUMS in $out"
