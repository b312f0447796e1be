#!/usr/bin/env bash
# Browser libraries for the chat UI and the operator dashboard, from the npm registry (pinned in
# package-lock.json), copied into chat/static_vendor/vendor/ so the project serves them itself:
# no CDN, and no front-end build step (the files are the libraries' own dist builds).
# Runs `npm ci` only when node_modules is missing or the lock file changed.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "vendor_static: installing Debian's nodejs and npm"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "vendor_static: npm is missing (apt-get install nodejs npm)" >&2
    exit 1
  fi
fi

lock_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
stamp=node_modules/.lock-sha256
if [ ! -d node_modules ] || [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_sum" > "$stamp"
fi

out=chat/static_vendor/vendor
rm -rf "$out"
mkdir -p "$out/chartjs" "$out/marked" "$out/dompurify" "$out/highlightjs" "$out/katex"
# The source maps too: collectstatic with a manifest storage refuses a dangling sourceMappingURL.
cp node_modules/chart.js/dist/chart.umd.min.js{,.map} node_modules/chart.js/LICENSE.md "$out/chartjs/"
cp node_modules/marked/lib/marked.esm.js{,.map} node_modules/marked/LICENSE "$out/marked/"
cp node_modules/dompurify/dist/purify.es.mjs{,.map} node_modules/dompurify/LICENSE "$out/dompurify/"
# highlight.js's own ES module build with its common languages (no source map is shipped, none referenced).
cp node_modules/@highlightjs/cdn-assets/es/highlight.min.js node_modules/@highlightjs/cdn-assets/LICENSE "$out/highlightjs/"
# KaTeX (math in replies): its ES module, its stylesheet and the fonts the stylesheet names (every
# format it lists, so a manifest storage finds each url()); no source map is shipped.
cp node_modules/katex/dist/katex.mjs node_modules/katex/dist/katex.min.css node_modules/katex/LICENSE "$out/katex/"
cp -r node_modules/katex/dist/fonts "$out/katex/"
echo "vendor_static: chart.js $(node -p 'require("./node_modules/chart.js/package.json").version'), marked $(node -p 'require("./node_modules/marked/package.json").version'), dompurify $(node -p 'require("./node_modules/dompurify/package.json").version'), highlight.js $(node -p 'require("./node_modules/@highlightjs/cdn-assets/package.json").version'), katex $(node -p 'require("./node_modules/katex/package.json").version') -> $out"
