#!/usr/bin/env bash
# Prints the path of a Prometheus tool (promtool or prometheus), installing it when absent, for the monitoring
# tests and for operators checking infra/ops/monitoring/ by hand:
#   1. $PROMTOOL / $PROMETHEUS when set (a binary you trust);
#   2. on PATH (Debian/Ubuntu: `apt-get install prometheus` ships both);
#   3. built before into .cache/prometheus/$VERSION/;
#   4. as root with apt-get (Debian's `prometheus` package: seconds, where a cold `go install` took over an hour
#      on 2 loaded cores);
#   5. built now with `go install` from the Go module proxy (Go >= 1.24; a few minutes on 2 cores, ~150 MB
#      of module cache), into .cache/prometheus/$VERSION/.
# Exit 3 with one line on stderr when none of these can be had (no binary, no Go).
set -euo pipefail

tool="${1:-}"
case "$tool" in
  promtool) env_path="${PROMTOOL:-}" ;;
  prometheus) env_path="${PROMETHEUS:-}" ;;
  *) echo "usage: $0 promtool|prometheus" >&2; exit 2 ;;
esac

# Prometheus 3.x releases are tagged v0.3XX.Y as a Go module (3.16.0 = v0.316.0).
VERSION="v0.316.0"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="$root/.cache/prometheus/$VERSION"

if [ -n "$env_path" ]; then
  [ -x "$env_path" ] || { echo "$tool: ${tool^^} names $env_path, which is not an executable file" >&2; exit 3; }
  echo "$env_path"; exit 0
fi
if command -v "$tool" >/dev/null 2>&1; then command -v "$tool"; exit 0; fi
if [ -x "$dir/$tool" ]; then echo "$dir/$tool"; exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && [ -z "${MERIDIAN_NO_APT:-}" ]; then
  echo "$tool: installing Debian's prometheus package with apt-get (once; MERIDIAN_NO_APT=1 skips this)" >&2
  # --no-install-recommends: the tools only (on this kind of machine, without an init, the package starts no daemon).
  if { apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1 || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1; }; } && command -v "$tool" >/dev/null 2>&1; then
    command -v "$tool"; exit 0
  fi
  echo "$tool: apt-get could not install prometheus; building it with go install instead" >&2
fi
if ! command -v go >/dev/null 2>&1; then
  echo "$tool: not on PATH and no Go to build it (apt-get install prometheus, or install Go >= 1.24)" >&2
  exit 3
fi
mkdir -p "$dir"
echo "$tool: building github.com/prometheus/prometheus/cmd/$tool@$VERSION with go install into .cache/prometheus/$VERSION (once)" >&2
# A temporary GOBIN renamed into place: a concurrent build never leaves half a binary at the final path.
tmp="$(mktemp -d "$dir/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp" GOFLAGS="${GOFLAGS:--p=2}" go install "github.com/prometheus/prometheus/cmd/$tool@$VERSION" >&2
mv -f "$tmp/$tool" "$dir/$tool"
echo "$dir/$tool"
