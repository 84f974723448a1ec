#!/usr/bin/env bash
# Headless Chromium for the browser tests, installed idempotently.
#
#   scripts/browser.sh install   Debian's chromium (apt) and playwright-core (npm,
#                                into $LIVE_CI_WORK/browser); quick when present
#   scripts/browser.sh node-path print the node_modules dir holding playwright-core
#   scripts/browser.sh chromium  print the chromium binary
#
# Playwright's own browser download cannot work here (only package registries are
# reachable): playwright-core drives Debian's /usr/bin/chromium instead.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${LIVE_CI_WORK:-$ROOT/.work}
DIR=$WORK/browser
CHROMIUM=${LIVE_CI_CHROMIUM:-/usr/bin/chromium}
PLAYWRIGHT_VERSION=1.64.1

die() { echo "browser.sh: $*" >&2; exit 1; }

install_chromium() {
  [ -x "$CHROMIUM" ] && return
  command -v apt-get >/dev/null || die "no $CHROMIUM and no apt-get to install it"
  # apt's lists may be missing on a fresh machine: update once, then install.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 || {
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
  }
  [ -x "$CHROMIUM" ] || die "chromium did not install at $CHROMIUM"
}

install_playwright() {
  [ -f "$DIR/node_modules/playwright-core/package.json" ] && return
  command -v npm >/dev/null || die "npm is needed for playwright-core"
  mkdir -p "$DIR"
  (cd "$DIR" && { [ -f package.json ] || echo '{"private":true}' > package.json; } \
    && npm install --no-audit --no-fund --silent "playwright-core@$PLAYWRIGHT_VERSION" >/dev/null)
}

case "${1:-install}" in
  install)
    mkdir -p "$WORK"
    exec 9>"$WORK/browser.lock"
    flock 9
    install_chromium
    install_playwright
    ;;
  node-path) echo "$DIR/node_modules" ;;
  chromium) echo "$CHROMIUM" ;;
  *) die "usage: $0 install|node-path|chromium" ;;
esac
