#!/usr/bin/env bash
# Runs a three-server tenure cluster on loopback, in the foreground.
#
#   make run                    # builds bin/tenure, then runs this
#   RUN_DIR=/tmp/t make run     # keep the data elsewhere
#   LOG_LEVEL=debug make run
#
# Each server logs to stdout with its name in front. Ctrl-C (or SIGTERM)
# stops all three. Stop one server by hand (kill <pid>, the pids are
# printed) to watch the other two elect a new leader; the script keeps
# running until the last server is gone. The data stays in RUN_DIR, so the
# next run restarts the same cluster; `make clean-run` removes it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

BIN=${BIN:-bin/tenure}
RUN_DIR=${RUN_DIR:-.run}
LOG_LEVEL=${LOG_LEVEL:-info}

# name http raft gossip
NODES=(
	"n1 127.0.0.1:7500 127.0.0.1:7501 127.0.0.1:7502"
	"n2 127.0.0.1:7510 127.0.0.1:7511 127.0.0.1:7512"
	"n3 127.0.0.1:7520 127.0.0.1:7521 127.0.0.1:7522"
)

if [[ ! -x $BIN ]]; then
	echo "run-cluster: $BIN not found; run make build" >&2
	exit 1
fi
mkdir -p "$RUN_DIR"
RUN_DIR=$(cd "$RUN_DIR" && pwd)

# Ctrl-C reaches every process of the terminal's foreground group: the
# servers shut down on it, and the log filters ignore it so that they relay
# the servers' last lines and end when the servers close their output.
pids=()
names=()

stop_all() {
	trap - INT TERM EXIT
	local pid
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	wait || true
	echo "run-cluster: all servers stopped"
}
trap stop_all EXIT
trap 'echo "run-cluster: stopping"; exit 130' INT
trap 'echo "run-cluster: stopping"; exit 143' TERM

http_addrs=()
for node in "${NODES[@]}"; do
	read -r name http raft gossip <<<"$node"
	http_addrs+=("$http")
	join=()
	for other in "${NODES[@]}"; do
		read -r oname _ _ ogossip <<<"$other"
		[[ $oname == "$name" ]] || join+=("$ogossip")
	done
	joined=$(IFS=,; echo "${join[*]}")
	"$BIN" server \
		-node-id "$name" \
		-data-dir "$RUN_DIR/$name" \
		-http-addr "$http" \
		-raft-addr "$raft" \
		-gossip-addr "$gossip" \
		-bootstrap-expect 3 \
		-join "$joined" \
		-log-level "$LOG_LEVEL" \
		> >(trap '' INT TERM; exec sed -u "s/^/[$name] /") 2>&1 &
	pids+=("$!")
	names+=("$name")
done

# A server that cannot start (a port in use, a bad flag) exits at once:
# report it rather than run a cluster with a member missing.
sleep 1
for i in "${!pids[@]}"; do
	if ! kill -0 "${pids[$i]}" 2>/dev/null; then
		echo "run-cluster: ${names[$i]} exited at start; its log is above" >&2
		exit 1
	fi
done

addrs=$(IFS=,; echo "${http_addrs[*]}")
cat <<EOF

tenure: three servers on loopback, data in $RUN_DIR
  n1  pid ${pids[0]}  http://${http_addrs[0]}
  n2  pid ${pids[1]}  http://${http_addrs[1]}
  n3  pid ${pids[2]}  http://${http_addrs[2]}

  TENURE_HTTP_ADDR=$addrs $BIN status
  kill <pid> stops one server; Ctrl-C stops them all.

EOF

# Returns once every server has exited, or at once on a signal; the traps
# above stop the rest.
wait
