#!/usr/bin/env bash
# Installs the pgvector extension into the local PostgreSQL when it is missing.
# Debian 12 packages no pgvector for PostgreSQL 15, so it is built from Debian trixie's
# source package (0.8.0, with Debian's no-native patch) against postgresql-server-dev.
set -euo pipefail
PGVER="${PGVER:-$(ls /etc/postgresql 2>/dev/null | sort -n | tail -1)}"
PGVER="${PGVER:-15}"
if [ -f "/usr/share/postgresql/$PGVER/extension/vector.control" ]; then
  echo "pgvector: already installed for PostgreSQL $PGVER"; exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "pgvector: not installed and not root; install pgvector for PostgreSQL $PGVER by hand" >&2; exit 1
fi
echo "pgvector: building 0.8.0 for PostgreSQL $PGVER (about a minute)"
SRC_LIST=/etc/apt/sources.list.d/agno-site-trixie-src.sources
MIRROR=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
printf 'Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$MIRROR" > "$SRC_LIST"
trap 'rm -f "$SRC_LIST"' EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "postgresql-server-dev-$PGVER" dpkg-dev >/dev/null
work="$(mktemp -d)"
(
  cd "$work"
  apt-get source -qq pgvector >/dev/null 2>&1
  cd pgvector-*/
  make -s -j"$(nproc)" PG_CONFIG="/usr/lib/postgresql/$PGVER/bin/pg_config" >/dev/null
  make -s install PG_CONFIG="/usr/lib/postgresql/$PGVER/bin/pg_config" >/dev/null
)
rm -rf "$work"
rm -f "$SRC_LIST"; apt-get update -qq || true
echo "pgvector: installed"
