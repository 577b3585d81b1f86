#!/usr/bin/env bash
# Runs the placement demo on loopback, in the foreground: the three servers
# of `make run` (deploy/local/run-cluster.sh), a group `partitions` of 64
# keys, and four `tenure demo-worker` processes that share its keys.
#
#   make demo                   # builds bin/tenure, then runs this
#   RUN_DIR=/tmp/t make demo    # keep the data elsewhere
#
# Each process logs to stdout with its name in front. Kill a worker (the
# pids are printed) and watch its keys move to the others once its leases
# expire and gossip declares it dead; drain one and watch it hand its keys
# over. Ctrl-C (or SIGTERM) stops the workers, then the servers.
#
# The demo's servers keep their data in RUN_DIR/demo, which is emptied at
# every start, so that a worker drained in an earlier run is not drained
# in this one. It uses the ports of `make run`: stop that first.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

BIN=${BIN:-bin/tenure}
RUN_DIR=${RUN_DIR:-.run}
GROUP=partitions
WORKERS=4

# The HTTP addresses of the servers of run-cluster.sh.
export TENURE_HTTP_ADDR=127.0.0.1:7500,127.0.0.1:7510,127.0.0.1:7520

if [[ ! -x $BIN ]]; then
	echo "run-demo: $BIN not found; run make build" >&2
	exit 1
fi
DATA_DIR=$RUN_DIR/demo
rm -rf -- "$DATA_DIR"
mkdir -p "$DATA_DIR"

# Every child runs in a process group of its own (job control), so that
# Ctrl-C reaches only this script, which stops the workers first (they hand
# their keys back while the servers still answer), then the servers.
set -m

cluster_pid=
worker_pids=()

# stop_pids sends SIGTERM to each pid, waits up to 15s for all of them to
# exit, then sends SIGKILL to those left.
stop_pids() {
	local pid left
	for pid in "$@"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for _ in $(seq 150); do
		left=0
		for pid in "$@"; do
			if kill -0 "$pid" 2>/dev/null; then
				left=1
			fi
		done
		((left)) || break
		sleep 0.1
	done
	for pid in "$@"; do
		kill -KILL "$pid" 2>/dev/null || true
	done
}

stop_all() {
	# A second Ctrl-C (or a signal sent to the whole process group) while
	# stopping must not end this script half-way: the workers and servers
	# not yet stopped would be left running on the ports of `make run`.
	# stop_pids ends them within 15s each way.
	trap - EXIT
	trap '' INT TERM HUP
	echo "run-demo: stopping the workers"
	if ((${#worker_pids[@]})); then
		stop_pids "${worker_pids[@]}"
	fi
	if [[ -n $cluster_pid ]]; then
		echo "run-demo: stopping the servers"
		# run-cluster.sh stops its servers on SIGTERM and waits for them.
		stop_pids "$cluster_pid"
	fi
	wait 2>/dev/null || true
	echo "run-demo: stopped"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

BIN=$BIN RUN_DIR=$DATA_DIR deploy/local/run-cluster.sh </dev/null &
cluster_pid=$!

# Wait for a leader: `tenure status` exits 0 and names it once the servers
# elected one; before that it prints "Leader: none" and exits 1.
leader=
for _ in $(seq 300); do
	if ! kill -0 "$cluster_pid" 2>/dev/null; then
		echo "run-demo: the servers did not start; their output is above" >&2
		exit 1
	fi
	if status=$("$BIN" status 2>/dev/null); then
		leader=$(awk '$1 == "Leader:" && $2 != "none" { print $2 }' <<<"$status")
	fi
	[[ -n $leader ]] && break
	sleep 0.1
done
if [[ -z $leader ]]; then
	echo "run-demo: no leader after 30s" >&2
	exit 1
fi
echo "run-demo: $leader leads"

"$BIN" groups create "$GROUP" -prefix "$GROUP/" -count 64

for i in $(seq "$WORKERS"); do
	name=worker-$i
	"$BIN" demo-worker -group "$GROUP" -id "$name" -quiet </dev/null \
		> >(trap '' INT TERM; exec sed -u "s/^/[$name] /") 2>&1 &
	worker_pids+=("$!")
done

cat <<EOF

tenure demo: group $GROUP (64 keys) over $WORKERS workers
$(for i in "${!worker_pids[@]}"; do printf '  worker-%d  pid %s\n' "$((i + 1))" "${worker_pids[$i]}"; done)

  bin/tenure groups get $GROUP         every key: target, holder, token
  kill <pid> of a worker and watch its keys move to the others
  bin/tenure workers drain worker-2       worker-2 hands its keys over
  bin/tenure workers undrain worker-2
  bin/tenure keys disable $GROUP/7   its worker hands it back

  (the commands talk to 127.0.0.1:7500; with n1 stopped, set
  TENURE_HTTP_ADDR=$TENURE_HTTP_ADDR)
  Ctrl-C stops everything.

EOF

# Returns once the servers have exited, or at once on a signal; the traps
# above stop the rest. A worker that dies leaves the demo running.
wait "$cluster_pid"
