#!/usr/bin/env bash
# Installs Debian's Chromium (/usr/bin/chromium) and a sans-serif font (DejaVu) for the HTML
# report's browser test (tests/browser.rs). Idempotent and quiet: does nothing when both are
# there; otherwise one `apt-get update` and one `apt-get install`, whose output is shown only
# when they fail. Needs root (or sudo) and Debian's package archive. Prints the browser's
# path. SERVEBENCH_CHROMIUM names another browser binary to check for instead.
set -euo pipefail
browser=${SERVEBENCH_CHROMIUM:-/usr/bin/chromium}
have_font() { fc-list 2>/dev/null | grep -qi 'DejaVu Sans'; }
if [[ ! -x $browser ]] || ! have_font; then
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  log=$(mktemp)
  export DEBIAN_FRONTEND=noninteractive
  if ! { "${sudo[@]}" apt-get update -qq &&
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core fontconfig; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "error: apt-get could not install chromium" >&2
    exit 1
  fi
  rm -f "$log"
fi
if [[ ! -x $browser ]]; then
  echo "error: $browser is still missing after apt-get install chromium" >&2
  exit 1
fi
echo "$browser"
