package worker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client/wire"
)

// joinReportEvery is how often a worker repeats why its gossip join keeps
// failing, while the reason stays the same.
const joinReportEvery = 30 * time.Second

// joinQuietFailures is how many joins may fail for want of an answer
// before the worker says so (servers that start with it answer soon); a
// failure that a gossip key explains is said at once.
const joinQuietFailures = 3

// keyFix names what gives a worker the cluster's gossip key.
const keyFix = "give the worker the servers' gossip key: worker.WithGossipKeys, or the " + EnvGossipKey +
	" variable (tenure demo-worker reads it); tenure operator keyring list shows the servers' key fingerprints"

// joinReport says, through the worker's logger, why its gossip join of the
// servers fails: at once for a reason about gossip keys, after a few
// failures when no server answered, then again when the reason changes and
// every joinReportEvery while it lasts. Only the joining goroutine uses it.
type joinReport struct {
	log      hclog.Logger
	failures int
	last     string
	at       time.Time
}

// joinDiagnosis is why a join failed, and what fixes it.
type joinDiagnosis struct {
	keys   bool // the gossip keys explain it (logged at Error)
	reason string
	fix    string
}

// failed records a failed join of peers with err and logs why, if it is
// time to. mine are the fingerprints of the worker's keys (nil without
// encryption); servers are the members the cluster lists, nil when it
// could not be asked.
func (r *joinReport) failed(peers []string, err error, mine []string, servers []wire.Member) {
	r.failures++
	d := diagnoseJoin(peers, err, mine, servers)
	if !d.keys && r.failures < joinQuietFailures {
		return
	}
	if d.reason == r.last && time.Since(r.at) < joinReportEvery {
		return
	}
	r.last, r.at = d.reason, time.Now()
	args := []any{"reason", d.reason, "fix", d.fix, "servers", strings.Join(peers, ","), "attempts", r.failures}
	if err != nil {
		// One line: memberlist's join error lists its attempts on several.
		args = append(args, "error", strings.Join(strings.Fields(err.Error()), " "))
	}
	if d.keys {
		r.log.Error("gossip with the servers fails: the balancer gives this worker no keys", args...)
	} else {
		r.log.Warn("gossip with the servers fails: the balancer gives this worker no keys", args...)
	}
}

// joined logs, after a reported failure, that the join succeeded.
func (r *joinReport) joined(n int) {
	if r.last != "" {
		r.log.Info("gossip with the servers works again", "peers", n, "attempts", r.failures)
	}
	r.failures, r.last = 0, ""
}

// diagnoseJoin explains a failed join of peers: from the gossip keys the
// servers announce (GET /v1/members) when servers is not nil, else from
// memberlist's error.
func diagnoseJoin(peers []string, err error, mine []string, servers []wire.Member) joinDiagnosis {
	var theirs []string
	encrypted, plain := 0, 0
	for _, m := range servers {
		if m.Role != "server" || m.Status != "alive" {
			continue
		}
		if len(m.Meta.Keys) == 0 {
			plain++
			continue
		}
		encrypted++
		for _, k := range m.Meta.Keys {
			if !slices.Contains(theirs, k) {
				theirs = append(theirs, k)
			}
		}
	}
	shared := slices.ContainsFunc(mine, func(k string) bool { return slices.Contains(theirs, k) })
	text := ""
	if err != nil {
		text = strings.ToLower(err.Error())
	}
	switch {
	case encrypted > 0 && len(mine) == 0,
		servers == nil && len(mine) == 0 && strings.Contains(text, "encrypt"):
		r := "the servers' gossip is encrypted and this worker has no gossip key"
		if len(theirs) > 0 {
			r = fmt.Sprintf("the servers' gossip is encrypted (key fingerprints %s) and this worker has no gossip key", strings.Join(theirs, ","))
		}
		return joinDiagnosis{keys: true, reason: r, fix: keyFix}
	case encrypted > 0 && !shared:
		return joinDiagnosis{keys: true, reason: fmt.Sprintf("this worker's gossip keys (fingerprints %s) are none of the servers' (%s)",
			strings.Join(mine, ","), strings.Join(theirs, ",")), fix: keyFix}
	case servers == nil && len(mine) > 0 && strings.Contains(text, "no installed keys could decrypt"):
		return joinDiagnosis{keys: true, reason: fmt.Sprintf("the servers cannot decrypt this worker's gossip: its keys (fingerprints %s) are not theirs", strings.Join(mine, ",")), fix: keyFix}
	case plain > 0 && encrypted == 0 && len(mine) > 0,
		servers == nil && len(mine) > 0 && strings.Contains(text, "encryption is not configured"):
		return joinDiagnosis{keys: true, reason: "this worker encrypts its gossip but the servers' gossip is not encrypted",
			fix: "start the worker without a gossip key (worker.WithGossipKeys, " + EnvGossipKey + "), or the servers with one (-gossip-key)"}
	case len(peers) == 0 && servers == nil:
		return joinDiagnosis{reason: "the worker cannot ask the cluster for its servers' gossip addresses (GET /v1/members)",
			fix: "check that the client reaches the servers' HTTP API (Config.Addresses), or name the servers' gossip addresses with worker.WithJoin"}
	case len(peers) == 0:
		return joinDiagnosis{reason: "the cluster lists no alive server to join (GET /v1/members)",
			fix: "start the servers with gossip (-gossip-addr), or name their gossip addresses with worker.WithJoin"}
	}
	return joinDiagnosis{reason: "no server answered the worker's gossip join",
		fix: "check that the servers' gossip addresses (-gossip-addr) are reachable from the worker, and that the servers reach the address it announces (worker.WithGossipAdvertise)"}
}
