#!/usr/bin/env bash
# Where the leader spends its CPU under one workload of `tenure bench`:
#
#   make build && test/bench/profile.sh renew 64      # op, clients
#   test/bench/profile.sh acquire 1 10                # and seconds (10)
#
# Runs the cluster of `make run` (deploy/local/run-cluster.sh, ports
# 7500-7522, default flags) with its data in a temporary directory, finds
# the leader, and records the leader's CPU with perf (Debian's linux-perf)
# while `tenure bench -op OP -clients N` runs against the cluster; then
# prints the bench's figures, the CPU seconds each server and the bench
# process used, and perf's report by function: flat (the functions the
# CPU was in), then cumulative (with what they called).
# Nothing else should run on the machine meanwhile.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

OP=${1:?usage: profile.sh OP CLIENTS [SECONDS]}
CLIENTS=${2:?usage: profile.sh OP CLIENTS [SECONDS]}
SECS=${3:-10}
BIN=${BIN:-bin/tenure}
command -v perf >/dev/null || { echo "profile: perf not found (apt-get install linux-perf)" >&2; exit 1; }

dir=$(mktemp -d)
RUN_DIR=$dir BIN=$BIN deploy/local/run-cluster.sh >"$dir/cluster.log" 2>&1 &
cluster=$!
trap 'kill -TERM $cluster 2>/dev/null; wait $cluster 2>/dev/null || true; rm -rf -- "$dir"' EXIT

leader=
for _ in $(seq 100); do
	leader=$(curl -fsS http://127.0.0.1:7500/v1/status 2>/dev/null | sed -n 's/.*"leader_http_addr":"\([^"]*\)".*/\1/p') || true
	[[ -n $leader ]] && break
	sleep 0.2
done
[[ -n $leader ]] || { echo "profile: no leader after 20 s; the cluster's log:" >&2; cat "$dir/cluster.log" >&2; exit 1; }
pid=$(ss -Hltnp "sport = :${leader##*:}" | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -1)
echo "profile: leader $leader, pid $pid; $OP with $CLIENTS clients for ${SECS}s"

# CPU seconds of each server (utime+stime of /proc/PID/stat) over the run,
# and of the bench process (bash's time): where the machine's two cores go.
cpu() { awk -v t="$(getconf CLK_TCK)" '{printf "%.2f", ($14+$15)/t}' "/proc/$1/stat"; }
servers=$(for port in 7500 7510 7520; do ss -Hltnp "sport = :$port" | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -1; done)
declare -A before
for s in $servers; do before[$s]=$(cpu "$s"); done
perf record -q -F 499 -g -o "$dir/perf.data" -p "$pid" -- sleep "$SECS" 2>/dev/null &
rec=$!
TIMEFORMAT="bench process: %U s user, %S s system"
time "$BIN" bench -http-addr 127.0.0.1:7500,127.0.0.1:7510,127.0.0.1:7520 -op "$OP" -clients "$CLIENTS" -duration "${SECS}s"
wait $rec
for s in $servers; do
	role=follower
	[[ $s == "$pid" ]] && role=leader
	echo "server $s ($role): $(echo "$(cpu "$s") - ${before[$s]}" | bc) CPU seconds"
done
echo
echo "== flat: the functions the leader's CPU was in (top 30)"
perf report -i "$dir/perf.data" --stdio --no-children --sort symbol -g none --percent-limit 0.8 2>/dev/null | grep -v '^#' | grep -v '^$' | head -30
echo
echo "== cumulative: with what they called (top 60)"
perf report -i "$dir/perf.data" --stdio --children --sort symbol -g none --percent-limit 2 2>/dev/null | grep -v "^#" | grep -v "^$" | head -60
