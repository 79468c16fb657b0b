#!/usr/bin/env bash
# `infra/scripts/with-node.sh MAJOR COMMAND...`: run COMMAND with Node MAJOR first on PATH, so it, npm's scripts
# and every child process they fork run on that Node line (`npm run test:node24` runs the suite on Node 24).
#
# The Node binary comes from the npm registry, through npm: the package `node-<os>-<arch>` (what the `node`
# package's own install script fetches; taken directly because npm 11 does not run dependencies' install scripts
# unless approved). It is installed once, without root, into $MERIDIAN_CACHE/node-MAJOR (else
# <project>/.cache/node-MAJOR, git-ignored); delete that folder to fetch the newest release of the line again.
#
# Environment: NODE_MAJOR_BIN=/path/to/node uses that binary instead (it must report vMAJOR.x).
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: with-node.sh MAJOR COMMAND [ARG...]" >&2
  exit 2
fi
MAJOR="$1"
shift
case "$MAJOR" in
  ''|*[!0-9]*) echo "with-node.sh: MAJOR must be a number, got \"$MAJOR\"" >&2; exit 2 ;;
esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${MERIDIAN_CACHE:-$ROOT/.cache}/node-$MAJOR"

if [ -n "${NODE_MAJOR_BIN:-}" ]; then
  BIN="$(dirname "$NODE_MAJOR_BIN")"
else
  # Node's names for the platform (process.platform, process.arch) are the package's suffix.
  PLATFORM="$(node -p 'process.platform + "-" + process.arch')"
  PKG="node-$PLATFORM"
  BIN="$CACHE/node_modules/$PKG/bin"
  if [ ! -x "$BIN/node" ]; then
    echo "with-node.sh: fetching Node $MAJOR ($PKG@$MAJOR from the npm registry) into $CACHE" >&2
    mkdir -p "$CACHE"
    npm install --prefix "$CACHE" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "$PKG@$MAJOR" >&2
  fi
fi

GOT="$("$BIN/node" --version)"
case "$GOT" in
  "v$MAJOR".*) ;;
  *) echo "with-node.sh: $BIN/node is $GOT, not Node $MAJOR" >&2; exit 1 ;;
esac
echo "with-node.sh: running on Node $GOT: $*" >&2
PATH="$BIN:$PATH" exec "$@"
