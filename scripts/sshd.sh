#!/usr/bin/env bash
# OpenSSH's server for the tests of git::ssh:// module sources, installed
# idempotently (the tests start their own sshd on a loopback port, with their
# own configuration, host key and authorized keys; nothing system-wide runs).
#
#   scripts/sshd.sh install   Debian's openssh-server (apt); quick when present
#   scripts/sshd.sh path      print the sshd binary
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${LIVE_CI_WORK:-$ROOT/.work}
SSHD=${LIVE_CI_SSHD:-/usr/sbin/sshd}

die() { echo "sshd.sh: $*" >&2; exit 1; }

install_sshd() {
  [ -x "$SSHD" ] && return
  command -v apt-get >/dev/null || die "no $SSHD and no apt-get to install it"
  # Installing the package must not start a system-wide sshd: policy-rc.d
  # refuses every service start while apt runs (Debian's documented switch).
  local policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod 0755 "$policy"
    # Removed however the install ends.
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  # apt's lists may be missing on a fresh machine: update once, then install.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssh-server >/dev/null 2>&1 || {
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssh-server >/dev/null
  }
  [ -x "$SSHD" ] || die "openssh-server did not install at $SSHD"
}

case "${1:-install}" in
  install)
    mkdir -p "$WORK"
    exec 9>"$WORK/sshd.lock"
    flock 9
    install_sshd
    ;;
  path) echo "$SSHD" ;;
  *) die "usage: $0 install|path" ;;
esac
