#!/usr/bin/env bash
# Debian's Chromium for the browser tests (Playwright drives it; no browser download).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then echo "chromium: already installed"; exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "chromium: missing and not root; apt-get install chromium" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
echo "chromium: installed"
