package jepsen

import "time"

// Nemesis pools.
var (
	partitionNemeses = []string{"partition-halves", "isolate-leader", "isolate-follower", "bridge", "one-way", "workers-servers", "delay-loss"}
	processNemeses   = []string{"pause-leader", "pause-follower", "pause-worker", "kill-follower", "kill-leader", "kill-all", "stop-leader", "transfer", "snapshot-install", "clock-drift", "corrupt-follower"}
	allWorkloads     = []string{"register", "mutex", "elect", "place"}
)

// adversaryRunTime is the fault phase of the short suite's adversary run:
// each attack about twice.
const adversaryRunTime = 40 * time.Second

// adversaryRun attacks the secure configuration (adversaryNemeses) and
// restores old backups (restoreNemeses) under the mutex workload: a
// restore steps the leases back in time, which the register workload's
// linearizability check would rightly reject.
func adversaryRun(servers int, d time.Duration) runConfig {
	return runConfig{Name: "adversary", Servers: servers, Duration: d, Nemeses: append(append([]string{}, adversaryNemeses...), restoreNemeses...),
		Workloads: []string{"mutex"}, Stall: 0.1, RevokeEvery: revokeEvery}
}

// revokeEvery is how often each mutex worker of the suite's runs revokes a
// random key as an operator would (safely): about every four holder TTLs.
const revokeEvery = 4 * holderTTL

// suite returns the runs of a suite; seed is the suite's seed, each run
// takes its own from it.
func suite(name string, servers int, limit time.Duration, seed uint64) []runConfig {
	var runs []runConfig
	add := func(c runConfig) {
		c.Seed = seed + uint64(len(runs))
		if c.MutexKeys == "" {
			c.MutexKeys = "mx-0,mx-1"
		}
		runs = append(runs, c)
	}
	switch name {
	case "long":
		all := append(append([]string{}, partitionNemeses...), processNemeses...)
		all = append(all, "lagging-leader", "stray-transfer") // not in the short suite's pools: its time budget
		if servers >= 5 {
			all = append(all, "majorities-ring")
		}
		all = append(all, diskNemeses...)
		all = append(all, adversaryNemeses...)
		add(runConfig{Name: "all-faults", Servers: servers, Duration: limit, Nemeses: all, Workloads: allWorkloads, Stall: 0.1, RevokeEvery: revokeEvery})
		add(adversaryRun(servers, 2*adversaryRunTime))
	default:
		add(runConfig{Name: "partitions", Servers: servers, Duration: limit, Nemeses: partitionNemeses, Workloads: allWorkloads, Stall: 0.1, RevokeEvery: revokeEvery})
		add(runConfig{Name: "processes", Servers: servers, Duration: limit, Nemeses: processNemeses, Workloads: allWorkloads, Stall: 0.1, RevokeEvery: revokeEvery})
		add(runConfig{Name: "disk-full", Servers: servers, Duration: diskRunTime, Nemeses: diskNemeses, Workloads: []string{"register", "mutex"}, Stall: 0.1, RevokeEvery: revokeEvery})
		add(adversaryRun(servers, adversaryRunTime))
	}
	for _, c := range controls(servers) {
		add(c)
	}
	return runs
}

// controls are the negative controls: builds with one deliberate bug each,
// under the fault that exposes it. Each must be reported as a violation by
// the checker it names, or the suite fails: a checker that never fails
// proves nothing.
func controls(servers int) []runConfig {
	return []runConfig{
		{Name: "control-renew-without-quorum", Servers: servers, Duration: 30 * time.Second,
			Nemeses: []string{"isolate-leader", "partition-halves"}, Workloads: []string{"register"},
			ServerTags: []string{tagUnsafeRenew}, Expect: resRegister},
		{Name: "control-client-keeps-lease", Servers: servers, Duration: 30 * time.Second,
			Nemeses: []string{"pause-worker"}, Workloads: []string{"mutex"}, MutexKeys: "mx-0",
			AgentTags: []string{tagUnsafeKeep}, Expect: resMutex},
		{Name: "control-store-skips-fencing", Servers: servers, Duration: 30 * time.Second,
			Nemeses: []string{"pause-worker"}, Workloads: []string{"mutex"}, MutexKeys: "mx-0", Stall: 0.5,
			StoreTags: []string{tagNoFence}, Expect: resFenced},
		// A leadership round that counts a voter's yes to an earlier
		// round (tenure_unsafe_rounds) lets a deposed leader serve stale
		// reads, but only while its Raft still says Leader after the
		// others elected. stray-transfer makes that overlap, for about
		// 300ms per fault, at a moment the nemesis chooses; 12 register
		// processes put reads and writes in it. A stale read needs a write
		// acknowledged by the new leader and then a read on the old one,
		// both inside that window: about nine faults in 60s miss it now
		// and then, so the control gets three schedules.
		{Name: "control-rounds-accept-older-answers", Servers: servers, Duration: 60 * time.Second,
			Nemeses: []string{"stray-transfer"}, Workloads: []string{"register"}, RegisterProcs: 12,
			ServerTags: []string{tagUnsafeRounds}, Expect: resRegister, Attempts: 3},
		// A hand-over that gives every lease no time left
		// (tenure_unsafe_handover) makes the next leader free the mutex
		// while its holder, which renewed moments before, still holds it;
		// a waiting worker takes it at once.
		{Name: "control-handover-gives-no-time", Servers: servers, Duration: 30 * time.Second,
			Nemeses: []string{"stop-leader"}, Workloads: []string{"mutex"}, MutexKeys: "mx-0",
			ServerTags: []string{tagUnsafeHandover}, Expect: resMutex},
		// Servers that take gossip's word for who a server is
		// (tenure_unsafe_identity) give a dead voter's slot to the
		// adversary's relay, and forward requests to its HTTP address.
		{Name: "control-forged-voter-takes-a-slot", Servers: servers, Duration: 20 * time.Second,
			Nemeses: []string{"forged-voter"}, Workloads: []string{"register"},
			ServerTags: []string{tagUnsafeIdentity}, Expect: resAdversary},
		{Name: "control-forged-leader-gets-forwarded-requests", Servers: servers, Duration: 20 * time.Second,
			Nemeses: []string{"forged-forwarder"}, Workloads: []string{"register"},
			ServerTags: []string{tagUnsafeIdentity}, Expect: resAdversary, Attempts: 2},
		// ACLs on a Raft port without TLS (tenure_unsafe_plainraft): one
		// forged AppendEntries writes a lease of the adversary's choice.
		{Name: "control-acls-on-plain-raft", Servers: servers, Duration: 10 * time.Second,
			Nemeses: []string{"forged-append"}, Workloads: []string{"register"},
			ServerTags: []string{tagUnsafePlainRaft}, PlainRaft: true, Expect: resAdversary},
		// A restore that takes the backup's leases as they are
		// (tenure_unsafe_restore) gives a key back its older token.
		{Name: "control-restore-lowers-a-token", Servers: servers, Duration: 10 * time.Second,
			Nemeses: []string{"old-restore"}, Workloads: []string{"mutex"}, MutexKeys: "mx-0",
			ServerTags: []string{tagUnsafeRestore}, Expect: resAdversary},
	}
}
