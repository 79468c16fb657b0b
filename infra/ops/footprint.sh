#!/usr/bin/env bash
# Memory footprint of a one-machine run, measured from outside: starts `meridian start` (the built dist/, config
# and environment as given), samples the resident set of its whole process tree every INTERVAL seconds for MINUTES
# minutes, then stops it with SIGINT (a clean stop) and prints a summary.
#
#   bash infra/ops/footprint.sh [MINUTES] [INTERVAL] [-- extra args to `meridian start`]
#   OUT=.meridian/footprint bash infra/ops/footprint.sh 60 30
#
# Writes OUT/samples.tsv (one line per sample: elapsed s, total RSS KiB, then name:KiB per process), OUT/main-parts.tsv
# (the main process's RSS, V8 heap used and total, external memory, and the embedded bus's retained bytes and
# records, from its /metrics) and OUT/metrics-*.txt
# (the run's /metrics at 10 min and at the end, for the per-part series: process_resident_memory_bytes,
# nodejs_heap_size_used_bytes, nodejs_external_memory_bytes, meridian_bus_embedded_retained_bytes{topic}, …).
# With READER=1 (the default) one subscriber (`meridian subscribe --include` a demo account, output discarded) reads
# the stream for the whole run, as a customer would; it is not counted in the total (it is not the service).
# Linux only (reads /proc). Run `npm run build` first. Only one one-machine run fits a machine at a time (fixed
# ports); move them with the MERIDIAN__… environment (README, "Pointing it at real nodes") if they clash.
set -euo pipefail
MINUTES=${1:-10}
INTERVAL=${2:-30}
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
OUT=${OUT:-.meridian/footprint}
mkdir -p "$OUT"
ENDPOINTS="$OUT/endpoints.json"

# The billing job's ledger goes under OUT: two runs sharing one outDir (this one and a test's, say) each take the
# other's ledger for a stale one and archive it, over and over.
MERIDIAN__BILLING__OUT_DIR=${MERIDIAN__BILLING__OUT_DIR:-$OUT/billing} \
  node dist/infra/cli.js start --endpoints "$ENDPOINTS" "$@" >"$OUT/service.log" 2>&1 &
ROOT=$!
trap 'kill -INT $ROOT 2>/dev/null || true; [ -n "$READER_PID" ] && kill $READER_PID 2>/dev/null || true' EXIT

# Every descendant of $ROOT (children of children included), from /proc's parent links.
tree() {
  local pids=("$1") i=0
  while [ $i -lt ${#pids[@]} ]; do
    local p=${pids[$i]}
    for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do pids+=("$c"); done
    i=$((i + 1))
  done
  echo "${pids[@]}"
}
rss_kib() { awk '/^VmRSS:/ { print $2 }' /proc/"$1"/status 2>/dev/null || echo 0; }
name_of() {
  # node processes by their script (cli.js start / fanout-worker.js / …), others by their command name.
  local a; a=$(tr '\0\n' '  ' </proc/"$1"/cmdline 2>/dev/null | cut -c1-200)
  case "$a" in
    *cli.js\ start*) echo main ;;
    *fanout-worker*) echo "fanout-worker" ;;
    node\ *|*/node\ *) basename "$(echo "$a" | awk '{print $2}')" .js ;;
    sh\ -c*|*/sh\ -c*) echo sh ;;
    *) basename "$(echo "$a" | awk '{print $1}')" ;;
  esac
}
READER=${READER:-1}
READER_PID=
start_reader() {
  local acct stream
  acct=$(node -e 'try{process.stdout.write(require(process.argv[1]).demo.accounts[0])}catch{}' "$(realpath -m "$ENDPOINTS")" 2>/dev/null || true)
  stream=$(node -e 'try{process.stdout.write(require(process.argv[1]).stream)}catch{}' "$(realpath -m "$ENDPOINTS")" 2>/dev/null || true)
  [ -n "$acct" ] && [ -n "$stream" ] || return 0
  node dist/infra/cli.js subscribe --url "$stream" --include "$acct" >/dev/null 2>"$OUT/reader.log" &
  READER_PID=$!
}
metrics_url() { node -e 'try{process.stdout.write(require(process.argv[1]).metrics)}catch{}' "$(realpath -m "$ENDPOINTS")" 2>/dev/null || true; }

START=$(date +%s)
END=$((START + MINUTES * 60))
took10=0
printf 'elapsed_s\ttotal_kib\tprocesses\n' >"$OUT/samples.tsv"
printf 'elapsed_s\trss_mib\theap_used_mib\theap_total_mib\texternal_mib\tbus_retained_mib\tbus_retained_records\n' >"$OUT/main-parts.tsv"
while :; do
  now=$(date +%s)
  [ -d /proc/$ROOT ] || { echo "footprint: the service exited early (see $OUT/service.log)" >&2; exit 1; }
  total=0; parts=""
  for p in $(tree $ROOT); do
    r=$(rss_kib "$p"); total=$((total + r)); parts="$parts $(name_of "$p"):$r"
  done
  el=$((now - START))
  printf '%s\t%s\t%s\n' "$el" "$total" "${parts# }" >>"$OUT/samples.tsv"
  printf 'footprint: %4d s  %5d MiB  %s\n' "$el" $((total / 1024)) "${parts# }"
  [ "$READER" = 1 ] && [ -z "$READER_PID" ] && start_reader
  url=$(metrics_url)
  # The main process's own view of its parts, from its runtime series and the embedded bus's gauges.
  if [ -n "$url" ]; then
    curl -s --max-time 5 "$url" 2>/dev/null | awk -v el="$el" '
      /^process_resident_memory_bytes / { rss = $2 } /^nodejs_heap_size_used_bytes / { used = $2 }
      /^nodejs_heap_size_total_bytes / { total = $2 } /^nodejs_external_memory_bytes / { ext = $2 }
      /^meridian_bus_embedded_retained_bytes\{/ { bb += $2 } /^meridian_bus_embedded_retained_records\{/ { br += $2 }
      END { if (rss != "") printf "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", el, rss / 1048576, used / 1048576, total / 1048576, ext / 1048576, bb / 1048576, br }' >>"$OUT/main-parts.tsv" || true
  fi
  if [ $took10 = 0 ] && [ $el -ge 600 ] && [ -n "$url" ]; then curl -s "$url" >"$OUT/metrics-10min.txt" || true; took10=1; fi
  [ $now -ge $END ] && break
  sleep "$INTERVAL"
done
url=$(metrics_url); [ -n "$url" ] && curl -s "$url" >"$OUT/metrics-end.txt" || true
[ -n "$READER_PID" ] && kill $READER_PID 2>/dev/null || true
kill -INT $ROOT; wait $ROOT || true
trap - EXIT
awk -F'\t' 'NR > 1 { t = $1; k = $2; if (k > max) max = k; if (t >= 600 && at10 == "") at10 = k; if (NR == 2) first = k; last = k }
  END { printf "footprint: start %d MiB, at 10 min %s MiB, end (%d s) %d MiB, peak %d MiB\n", first / 1024, at10 == "" ? "-" : int(at10 / 1024), t, last / 1024, max / 1024 }' "$OUT/samples.tsv"
