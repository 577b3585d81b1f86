package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// Golden files keep every encoding version readable. A build writes only
// the current version; the files of older versions stay in testdata and
// must keep decoding to the values listed here. To change the format, add
// a new version (a new file, current: true) and set current: false on the
// old one; never regenerate an old version's file.
//
// Regenerate the current files with: go test ./fsm -run Golden -update
var update = flag.Bool("update", false, "rewrite the current version's golden files in testdata")

// goldenLog is the lease part of the logs behind the snapshot golden files
// (all of snapshot-v1.golden's). It leaves one key of each kind: held and
// kept with new metadata, held again by the same holder after expiry, and
// free after a release, an expiry and a revocation.
func goldenLog() []entry {
	return encodeLog([]termCommand{
		{2, LeaderEstablished{Term: 2}},
		{2, Acquire{Key: "elections/scheduler", Holder: "sched-1", TTL: 15 * time.Second, Metadata: map[string]string{"zone": "eu-1", "version": "1.4.2"}, Time: wall}},
		{2, Acquire{Key: "partitions/0", Holder: "w-a", TTL: ttl, Time: wall + 1}},
		{2, Acquire{Key: "partitions/1", Holder: "w-b", TTL: ttl, Metadata: map[string]string{"slot": "1"}, Time: wall + 2}},
		{2, Acquire{Key: "scene-01", Holder: "tracker-0", TTL: 5 * time.Second, Time: wall + 3}},
		{2, Release{Key: "partitions/0", Holder: "w-a", Token: 2}},
		{2, Expire{Key: "partitions/1", Token: 3, Term: 2}},
		{2, Revoke{Key: "scene-01"}},
		{2, Acquire{Key: "partitions/2", Holder: "w-c", TTL: ttl, Time: wall + 4}},
		{3, LeaderEstablished{Term: 3}},
		{3, Expire{Key: "partitions/2", Token: 5, Term: 3}},
		{3, Acquire{Key: "partitions/2", Holder: "w-c", TTL: 20 * time.Second, Metadata: map[string]string{"slot": "2"}, Time: wall + 5}},
		{3, Acquire{Key: "elections/scheduler", Holder: "sched-1", TTL: 30 * time.Second, Metadata: map[string]string{"zone": "eu-2"}, Time: wall + 6}},
		{3, Acquire{Key: "elections/scheduler", Holder: "sched-2", TTL: ttl, Time: wall + 7}}, // held: changes nothing
	})
}

// goldenLogV2 is the log behind snapshot-v2.golden: goldenLog, then
// placement commands at indexes 15 to 31 that leave groups (one with an
// assignment, one deleted), key controls (one cleared) and drained workers
// (one undrained), and refused acquisitions that change nothing.
func goldenLogV2() []entry {
	return append(goldenLog(), encodeLog([]termCommand{
		// 15: keys sorted and deduplicated.
		{3, GroupPut{Name: "partitions", Keys: []string{"partitions/2", "partitions/0", "partitions/1", "partitions/0"}, MaxPerWorker: 2}},
		{3, GroupPut{Name: "elections", Keys: []string{"elections/scheduler"}}},
		// 17: "other" is not in the group and is dropped.
		{3, Assign{Group: "partitions", Assignment: map[string]string{"partitions/0": "w-a", "partitions/1": "w-b", "partitions/2": "w-c", "other": "w-z"}}},
		// 18: partitions/1 leaves with its assignment; partitions/3 joins unassigned.
		{3, GroupKeys{Name: "partitions", Add: []string{"partitions/3"}, Remove: []string{"partitions/1"}}},
		{3, GroupPut{Name: "scratch", Keys: []string{"tmp/1"}}},
		{3, GroupDelete{Name: "scratch"}},
		{3, GroupKeys{Name: "scratch", Add: []string{"tmp/2"}}}, // 21: not found
		{3, SetKeyControl{Key: "scene-01", Control: KeyControl{Disabled: true}, KeepsHolder: true}},
		{3, SetKeyControl{Key: "partitions/2", Control: KeyControl{Prohibited: []string{"w-z", "w-b", "w-z"}}, KeepsHolder: true}},
		{3, SetKeyControl{Key: "partitions/9", Control: KeyControl{Disabled: true, Prohibited: []string{"w-q"}}, KeepsHolder: true}},
		{3, SetKeyControl{Key: "partitions/9", Control: KeyControl{}, KeepsHolder: true}}, // 25: cleared
		{3, WorkerDrain{Worker: "w-b", Draining: true}},
		{3, WorkerDrain{Worker: "w-d", Draining: true}},
		{3, WorkerDrain{Worker: "w-a", Draining: true}},
		{3, WorkerDrain{Worker: "w-a", Draining: false}},                             // 29
		{3, Acquire{Key: "scene-01", Holder: "tracker-1", TTL: ttl, Time: wall + 8}}, // 30: disabled
		{3, Batch{Commands: []Command{
			Acquire{Key: "partitions/2", Holder: "w-b", TTL: ttl, Time: wall + 9}, // prohibited
			Assign{Group: "missing", Assignment: map[string]string{"partitions/3": "w-d"}},
		}}}, // 31
	})...)
}

// Tokens of the golden logs: hashes stand in for SHA-256 sums of secrets
// (the state machine never sees a secret).
var (
	goldenBootToken = ACLToken{AccessorID: "0d4f3b2a-1c5e-4a7b-9e8d-6f1a2b3c4d5e", SecretHash: strings.Repeat("b0", 32),
		Description: "bootstrap token", Management: true, CreateTime: wall + 10}
	goldenTrackerToken = ACLToken{AccessorID: "7e6d5c4b-3a29-4817-a6b5-c4d3e2f1a0b9", SecretHash: strings.Repeat("7e", 32),
		Description: "trackers", Policies: []string{"scenes", "missing", "scenes"}, HolderPrefix: "tracker-", CreateTime: wall + 11}
	goldenTempToken = ACLToken{AccessorID: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", SecretHash: strings.Repeat("9a", 32),
		Description: "deleted again", Management: true, CreateTime: wall + 12}
)

// goldenLogV3 is the log behind snapshot-v3.golden: goldenLogV2, then ACL
// commands and worker registrations at indexes 32 to 45, some refused or
// not found, that leave two tokens (one bound to a holder prefix and naming
// a policy that does not exist), a replaced policy, and two registrations
// (one replaced).
func goldenLogV3() []entry {
	tracker2 := goldenTrackerToken
	tracker2.AccessorID = "ffffffff-0000-4000-8000-000000000000" // same secret hash: refused
	return append(goldenLogV2(), encodeLog([]termCommand{
		{3, ACLBootstrap{Token: goldenBootToken}}, // 32
		{3, ACLBootstrap{Token: goldenTempToken}}, // 33: refused
		{3, ACLPolicySet{Policy: ACLPolicy{Name: "scenes", Description: "v1", Rules: []ACLRule{{Prefix: "scenes/", Rights: RightRead}}}}}, // 34
		{3, ACLPolicySet{Policy: ACLPolicy{Name: "ops", Rules: []ACLRule{{Prefix: "", Rights: RightOperator}}}}},                          // 35
		{3, ACLPolicySet{Policy: ACLPolicy{Name: "scenes", Description: "trackers own scenes", Rules: []ACLRule{
			{Prefix: "scenes/", Rights: RightRead | RightWrite}, {Prefix: "", Rights: RightRead}}}}}, // 36: replaced
		{3, ACLTokenSet{Token: goldenTrackerToken}},                 // 37
		{3, ACLTokenSet{Token: goldenTempToken}},                    // 38
		{3, ACLTokenDelete{AccessorID: goldenTempToken.AccessorID}}, // 39
		{3, ACLPolicyDelete{Name: "ops"}},                           // 40
		{3, ACLTokenDelete{AccessorID: "no-such-token"}},            // 41: not found
		{3, ACLTokenSet{Token: tracker2}},                           // 42: refused
		{3, WorkerRegister{Worker: "w-a", Groups: []string{"partitions", "elections", "partitions"}, Accessor: goldenTrackerToken.AccessorID}}, // 43
		{3, WorkerRegister{Worker: "w-b", Groups: []string{"partitions"}, Accessor: goldenTrackerToken.AccessorID}},                            // 44
		{3, WorkerRegister{Worker: "w-a", Groups: []string{"partitions"}, Accessor: goldenBootToken.AccessorID}},                               // 45: replaced
	})...)
}

// goldenLogV4 is the log behind snapshot-v4.golden: goldenLogV3, then
// group settings and stuck marks at indexes 46 to 49: a group defined with
// settings, stuck marks set, one refused for a missing group, and a stuck
// set replaced; then operator ends at indexes 50 to 56 that leave a lease
// ending because it was revoked, one ending because its holder was
// prohibited, and one freed by a forced revoke; a revoke by a holder with
// no lease changes nothing.
func goldenLogV4() []entry {
	return append(goldenLogV3(), encodeLog([]termCommand{
		{3, GroupDefine{Name: "partitions", Keys: []string{"partitions/3", "partitions/2", "partitions/0"}, MaxPerWorker: 2,
			StuckGrace: 45 * time.Second, MinWorkers: 3}}, // 46
		{3, MarkStuck{Group: "partitions", Workers: []string{"w-c", "w-a", "w-c"}}},   // 47
		{3, MarkStuck{Group: "no-such-group", Workers: []string{"w-a"}}},              // 48: not found
		{3, MarkStuck{Group: "partitions", Workers: []string{"w-c"}}},                 // 49
		{3, Acquire{Key: "scenes/7", Holder: "tracker-7", TTL: ttl, Time: wall + 10}}, // 50: token 7
		{3, End{Key: "scenes/7"}}, // 51
		{3, Acquire{Key: "scenes/8", Holder: "w-x", TTL: ttl, Time: wall + 11}},               // 52: token 8
		{3, SetKeyControl{Key: "scenes/8", Control: KeyControl{Prohibited: []string{"w-x"}}}}, // 53
		{3, End{Holder: "nobody"}}, // 54
		{3, Acquire{Key: "scenes/9", Holder: "w-y", TTL: ttl, Time: wall + 12}}, // 55: token 9
		{3, End{Key: "scenes/9", Force: true}},                                  // 56
	})...)
}

// goldenGroupsV4 is the placement state that goldenLogV4 leaves.
func goldenGroupsV4() []*Group {
	g := goldenGroups()
	p := g[1]
	p.StuckGrace, p.MinWorkers, p.Stuck = 45*time.Second, 3, []string{"w-c"}
	p.ModifyIndex = 49
	return g
}

// goldenLeasesV4 are the leases that goldenLogV4 leaves.
func goldenLeasesV4() []*Lease {
	return append(goldenLeases(),
		&Lease{Key: "scenes/7", Holder: "tracker-7", Token: 7, TTL: ttl, Held: true, Ending: ReasonRevoked,
			AcquiredAt: wall + 10, CreateIndex: 50, ModifyIndex: 51},
		&Lease{Key: "scenes/8", Holder: "w-x", Token: 8, TTL: ttl, Held: true, Ending: ReasonProhibited,
			AcquiredAt: wall + 11, CreateIndex: 52, ModifyIndex: 53},
		&Lease{Key: "scenes/9", Holder: "w-y", Token: 9, TTL: ttl, Reason: ReasonRevoked,
			AcquiredAt: wall + 12, CreateIndex: 55, ModifyIndex: 56},
	)
}

func goldenControlsV4() map[string]KeyControl {
	c := goldenControls()
	c["scenes/8"] = KeyControl{Prohibited: []string{"w-x"}}
	return c
}

// goldenACL is the ACL state that goldenLogV3 leaves.
func goldenACL() aclState {
	a := newACLState()
	a.bootstrapped = true
	a.index = 40
	boot, tracker := goldenBootToken, goldenTrackerToken
	boot.CreateIndex = 32
	tracker.CreateIndex, tracker.Policies = 37, []string{"missing", "scenes"}
	a.tokens[boot.AccessorID], a.tokens[tracker.AccessorID] = &boot, &tracker
	a.byHash[boot.SecretHash], a.byHash[tracker.SecretHash] = boot.AccessorID, tracker.AccessorID
	a.policies["scenes"] = &ACLPolicy{Name: "scenes", Description: "trackers own scenes", Rules: []ACLRule{
		{Prefix: "scenes/", Rights: RightRead | RightWrite}, {Prefix: "", Rights: RightRead}}, CreateIndex: 34, ModifyIndex: 36}
	a.workers["w-a"] = &WorkerRegistration{Worker: "w-a", Groups: []string{"partitions"}, Accessor: boot.AccessorID, Index: 45}
	a.workers["w-b"] = &WorkerRegistration{Worker: "w-b", Groups: []string{"partitions"}, Accessor: tracker.AccessorID, Index: 44}
	return a
}

type termCommand struct {
	term uint64
	cmd  Command
}

func encodeLog(cmds []termCommand) []entry {
	log := make([]entry, len(cmds))
	for i, c := range cmds {
		log[i] = entry{term: c.term, data: Encode(c.cmd)}
	}
	return log
}

// decodedSnapshot is what readSnapshot returns.
type decodedSnapshot struct {
	State       state
	Index, Term uint64
}

// goldenLeases are the leases that goldenLog leaves, in key order.
// goldenGroups and goldenControls are the placement state of the golden
// snapshots from version 2 on.
func goldenGroups() []*Group {
	return []*Group{
		{Name: "elections", Keys: []string{"elections/scheduler"}, CreateIndex: 16, ModifyIndex: 16},
		{Name: "partitions", Keys: []string{"partitions/0", "partitions/2", "partitions/3"}, MaxPerWorker: 2,
			Assignment:  map[string]string{"partitions/0": "w-a", "partitions/2": "w-c"},
			CreateIndex: 15, ModifyIndex: 18, AssignIndex: 17},
	}
}

func goldenControls() map[string]KeyControl {
	return map[string]KeyControl{
		"partitions/2": {Prohibited: []string{"w-b", "w-z"}},
		"scene-01":     {Disabled: true},
	}
}

func goldenLeases() []*Lease {
	return []*Lease{
		{Key: "elections/scheduler", Holder: "sched-1", Token: 1, TTL: 30 * time.Second, Held: true,
			Metadata: map[string]string{"zone": "eu-2"}, AcquiredAt: wall, CreateIndex: 2, ModifyIndex: 13},
		{Key: "partitions/0", Holder: "w-a", Token: 2, TTL: ttl, Reason: ReasonReleased,
			AcquiredAt: wall + 1, CreateIndex: 3, ModifyIndex: 6},
		{Key: "partitions/1", Holder: "w-b", Token: 3, TTL: ttl, Reason: ReasonExpired,
			Metadata: map[string]string{"slot": "1"}, AcquiredAt: wall + 2, CreateIndex: 4, ModifyIndex: 7},
		{Key: "partitions/2", Holder: "w-c", Token: 6, TTL: 20 * time.Second, Held: true,
			Metadata: map[string]string{"slot": "2"}, AcquiredAt: wall + 5, CreateIndex: 9, ModifyIndex: 12},
		{Key: "scene-01", Holder: "tracker-0", Token: 4, TTL: 5 * time.Second, Reason: ReasonRevoked,
			AcquiredAt: wall + 3, CreateIndex: 5, ModifyIndex: 8},
	}
}

// goldenStateV2 is the state of the version 2 and 3 golden snapshots: the
// leases of goldenLog and the placement state of goldenLogV2, with the
// given placement index and ACL state.
func goldenStateV2(groupIndex uint64, acl aclState) state {
	return state{
		lastToken:       6,
		establishedTerm: 3,
		leaseIndex:      13,
		leases:          goldenLeases(),
		groupIndex:      groupIndex,
		groups:          goldenGroups(),
		controls:        goldenControls(),
		drained:         []string{"w-b", "w-d"},
		acl:             acl,
	}
}

// goldenStateV4 is the state of the golden snapshots from version 4 on:
// the placement and ACL state of goldenLogV4, with the given lease part,
// cluster id and backup key (empty before the versions that added them).
func goldenStateV4(lastToken, leaseIndex uint64, leases []*Lease, clusterID string, backupKey []byte) state {
	return state{
		lastToken:       lastToken,
		establishedTerm: 3,
		leaseIndex:      leaseIndex,
		leases:          leases,
		groupIndex:      53,
		groups:          goldenGroupsV4(),
		controls:        goldenControlsV4(),
		drained:         []string{"w-b", "w-d"},
		acl:             goldenACL(),
		clusterID:       clusterID,
		backupKey:       backupKey,
	}
}

var goldenSnapshots = []struct {
	file    string
	version uint16 // the format version in the file's header
	current bool
	// log is the log behind the current version's file.
	log  func() []entry
	want decodedSnapshot
}{
	{
		file:    "snapshot-v1.golden",
		version: 1,
		want: decodedSnapshot{
			Index: 14,
			Term:  3,
			State: state{
				lastToken:       6,
				establishedTerm: 3,
				leaseIndex:      13,
				leases:          goldenLeases(),
				// Version 1 has no placement part: a server that starts
				// from it has no groups, key controls or drained workers.
				groupIndex: 0,
				groups:     nil,
				controls:   nil,
				drained:    nil,
				// Versions 1 and 2 have no ACL part: no tokens, not
				// bootstrapped.
				acl: newACLState(),
			},
		},
	},
	{file: "snapshot-v2.golden", version: 2, want: decodedSnapshot{Index: 31, Term: 3, State: goldenStateV2(29, newACLState())}},
	{file: "snapshot-v3.golden", version: 3, want: decodedSnapshot{Index: 45, Term: 3, State: goldenStateV2(45, goldenACL())}},
	{file: "snapshot-v4.golden", version: 4, want: decodedSnapshot{Index: 56, Term: 3,
		State: goldenStateV4(9, 56, goldenLeasesV4(), "", nil)}},
	{file: "snapshot-v5.golden", version: 5, want: decodedSnapshot{Index: 58, Term: 3,
		State: goldenStateV4(9, 56, goldenLeasesV4(), goldenClusterID, nil)}},
	{file: "snapshot-v6.golden", version: 6, want: decodedSnapshot{Index: 63, Term: 3,
		State: goldenStateV4(11, 62, goldenLeasesV6(), goldenClusterID, nil)}},
	{file: "snapshot-v7.golden", version: 7, want: decodedSnapshot{Index: 65, Term: 3,
		State: goldenStateV4(11, 62, goldenLeasesV6(), goldenClusterID, goldenBackupKey)}},
	{file: "snapshot-v8.golden", version: 8, want: decodedSnapshot{Index: 66, Term: 3,
		State: goldenStateV8()}},
	{file: "snapshot-v9.golden", version: 9, current: true, log: goldenLogV9, want: decodedSnapshot{Index: 68, Term: 3,
		State: goldenStateV9()}},
}

type namedCommand struct {
	name string
	cmd  Command
}

// goldenCommandsV1 holds one or more commands of every type.
var goldenCommandsV1 = []namedCommand{
	{"acquire", Acquire{Key: "scene-01", Holder: "tracker-0-4242-1a2b3c4d", TTL: ttl, Time: wall}},
	{"acquire-metadata", Acquire{Key: "partitions/17", Holder: "w-a", TTL: 1500 * time.Millisecond,
		Metadata: map[string]string{"zone": "eu-1", "version": "1.4.2"}, Time: wall}},
	{"release", Release{Key: "scene-01", Holder: "tracker-0-4242-1a2b3c4d", Token: 17}},
	{"expire", Expire{Key: "elections/scheduler", Token: 300, Term: 7}},
	{"revoke", Revoke{Key: "scene-01"}},
	{"leader-established", LeaderEstablished{Term: 12}},
	{"batch", Batch{Commands: []Command{
		Release{Key: "scene-01", Holder: "tracker-0", Token: 17},
		Acquire{Key: "scene-01", Holder: "tracker-1", TTL: ttl, Metadata: map[string]string{"zone": "eu-1"}, Time: wall},
	}}},
	{"empty-batch", Batch{Commands: []Command{}}},
	// Placement commands, added after the lines above were written.
	{"group-put", GroupPut{Name: "partitions", Keys: []string{"partitions/0", "partitions/1", "partitions/2"}, MaxPerWorker: 2}},
	{"group-delete", GroupDelete{Name: "partitions"}},
	{"group-keys", GroupKeys{Name: "partitions", Add: []string{"partitions/3", "partitions/4"}, Remove: []string{"partitions/0"}}},
	{"key-control", SetKeyControl{Key: "partitions/2", Control: KeyControl{Disabled: true, Prohibited: []string{"w-b", "w-z"}}, KeepsHolder: true}},
	{"worker-drain", WorkerDrain{Worker: "w-b", Draining: true}},
	{"assign", Assign{Group: "partitions", Assignment: map[string]string{"partitions/1": "w-a", "partitions/2": "w-c"}}},
	{"group-max", GroupMax{Name: "partitions", MaxPerWorker: 8}},
	// ACL commands and worker registration, added after the lines above
	// were written.
	{"acl-bootstrap", ACLBootstrap{Token: goldenBootToken}},
	{"acl-token-set", ACLTokenSet{Token: goldenTrackerToken}},
	{"acl-token-delete", ACLTokenDelete{AccessorID: goldenTrackerToken.AccessorID}},
	{"acl-policy-set", ACLPolicySet{Policy: ACLPolicy{Name: "scenes", Description: "trackers own scenes", Rules: []ACLRule{
		{Prefix: "scenes/", Rights: RightRead | RightWrite}, {Prefix: "", Rights: RightRead | RightOperator | RightACL}}}}},
	{"acl-policy-delete", ACLPolicyDelete{Name: "scenes"}},
	{"worker-register", WorkerRegister{Worker: "w-a", Groups: []string{"elections", "partitions"}, Accessor: goldenTrackerToken.AccessorID}},
	// Compare-and-set group put, control edit and forget, added after the
	// lines above were written.
	{"group-put-cas", GroupPutCAS{Define: GroupDefine{Name: "partitions", Keys: []string{"partitions/0", "partitions/1"}, MaxPerWorker: 1,
		StuckGrace: 30 * time.Second, MinWorkers: 2}, Index: 9}},
	{"edit-key-control", EditKeyControl{Key: "partitions/1", SetDisabled: true, Disabled: true, Prohibit: []string{"w-c"}, Allow: []string{"w-b"}}},
	{"forget", Forget{Key: "locks/once", Token: 21}},
	// Group settings and stuck marks, added after the lines above were
	// written.
	{"group-define", GroupDefine{Name: "partitions", Keys: []string{"partitions/0", "partitions/1"}, MaxPerWorker: 2,
		StuckGrace: 40 * time.Second, MinWorkers: 3}},
	{"mark-stuck", MarkStuck{Group: "partitions", Workers: []string{"w-a", "w-c"}}},
	// Operator attribution, added after the lines above were written.
	{"by", By{Accessor: goldenTrackerToken.AccessorID, Cmd: Revoke{Key: "scene-01"}}},
	{"batch-by", Batch{Commands: []Command{
		By{Accessor: "anonymous", Cmd: SetKeyControl{Key: "scene-01", Control: KeyControl{Disabled: true}}},
		Acquire{Key: "scene-02", Holder: "tracker-1", TTL: ttl, Time: wall},
	}}},
	// Operator ends, added after the lines above were written.
	{"end", End{Key: "scene-01"}},
	{"end-holder-force", End{Holder: "tracker-0-4242-1a2b3c4d", Force: true}},
	{"end-key-of-holder", End{Key: "scene-01", Holder: "tracker-0"}},
	{"key-control-force", SetKeyControl{Key: "partitions/2", Control: KeyControl{Disabled: true, Prohibited: []string{"w-b"}}, Force: true}},
	// Key controls that end a refused holder's lease, added after the lines
	// above were written.
	{"key-control-end", SetKeyControl{Key: "partitions/2", Control: KeyControl{Disabled: true, Prohibited: []string{"w-b"}}}},
	// The cluster id, added after the lines above were written.
	{"cluster-id", ClusterID{ID: goldenClusterID}},
}

// goldenCommandsV2 holds the commands of the version with checksums: those
// of V1, and the ones added since, which were never written without an
// envelope.
var goldenCommandsV2 = append(slices.Clone(goldenCommandsV1),
	// A leader's hand-over.
	namedCommand{"handover", Handover{Term: 12, Leases: []HandedLease{
		{Key: "elections/scheduler", Token: 300, ModifyIndex: 41, Left: 7250 * time.Millisecond},
		{Key: "scene-01", Token: 17, ModifyIndex: 9, Left: 0},
	}}},
	// Acquire and Release with a lease secret's hash (payload version 2),
	// added after the lines above were written.
	namedCommand{"acquire-secret", Acquire{Key: "scene-01", Holder: "tracker-0-4242-1a2b3c4d", TTL: ttl, Time: wall,
		SecretHash: HashSecret("6b1f0c3e9a2d4f5e8c7b6a5d4e3f2a1b")}},
	namedCommand{"release-secret", Release{Key: "scene-01", Holder: "tracker-0-4242-1a2b3c4d", Token: 17,
		SecretHash: HashSecret("6b1f0c3e9a2d4f5e8c7b6a5d4e3f2a1b")}},
	namedCommand{"batch-secret", Batch{Commands: []Command{
		Release{Key: "scene-01", Holder: "tracker-0", Token: 17, SecretHash: HashSecret("0f1e2d3c4b5a69788796a5b4c3d2e1f0")},
		Acquire{Key: "scene-01", Holder: "tracker-1", TTL: ttl, Time: wall, SecretHash: HashSecret("6b1f0c3e9a2d4f5e8c7b6a5d4e3f2a1b")},
	}}},
	// The backup key, added after the lines above were written.
	namedCommand{"backup-key", BackupKey{Key: goldenBackupKey}},
	// Setting a group's whole key set, added after that.
	namedCommand{"group-set-keys", GroupSetKeys{Name: "sessions", Keys: []string{"sessions/b", "sessions/a"}}},
	// A group's balance, added after that.
	namedCommand{"group-balance", GroupBalance{Name: "partitions", Balance: goldenBalance}},
	// A plan with keys to prepare (Assign, payload version 2) and a
	// worker's word that it prepared, added after that.
	namedCommand{"assign-prepare", Assign{Group: "partitions", Assignment: map[string]string{"partitions/0": "w-a"},
		Prepare: map[string]string{"partitions/0": "w-b"}, Base: 41}},
	namedCommand{"prepared", Prepared{Group: "partitions", Worker: "w-b", Keys: []string{"partitions/0"}}},
)

var goldenCommands = []struct {
	file    string
	current bool
	want    []namedCommand
}{
	// Written before checksums: every command without an envelope.
	{file: "commands-v1.golden", want: goldenCommandsV1},
	// The same commands in checksummed envelopes.
	{file: "commands-v2.golden", current: true, want: goldenCommandsV2},
}

func goldenPath(file string) string { return filepath.Join("testdata", file) }

func TestGoldenSnapshot(t *testing.T) {
	for _, g := range goldenSnapshots {
		t.Run(g.file, func(t *testing.T) {
			path := goldenPath(g.file)
			if g.current {
				if g.version != snapshotVersion {
					t.Fatalf("%s is the current file but has version %d; this build writes %d", path, g.version, snapshotVersion)
				}
				m := replay(t, g.log())
				written := persist(t, m)
				if *update {
					writeGolden(t, path, written)
				}
				golden := readGolden(t, path)
				if !bytes.Equal(written, golden) {
					t.Errorf("snapshot of the golden log differs from %s:\n got %x\nwant %x\n"+
						"a change to the snapshot format needs a new version; see the comment on update",
						path, written, golden)
				}
			}

			golden := readGolden(t, path)
			if len(golden) < 6 {
				t.Fatalf("%s is %d bytes, too short for a header", path, len(golden))
			}
			// An old version's file is never regenerated: its header must
			// still carry its own version.
			if got := binary.BigEndian.Uint16(golden[4:6]); got != g.version {
				t.Fatalf("%s has format version %d in its header, want %d", path, got, g.version)
			}
			st, index, term, err := readSnapshot(bytes.NewReader(golden), 0)
			if err != nil {
				t.Fatalf("readSnapshot(%s): %v", path, err)
			}
			got := decodedSnapshot{State: st, Index: index, Term: term}
			if !reflect.DeepEqual(got, g.want) {
				t.Errorf("%s decodes to\n%s\nwant\n%s", path, formatSnapshot(got), formatSnapshot(g.want))
			}

			// A server starting from the file has the same state and hands
			// out the next token.
			m := New()
			if err := m.Restore(io.NopCloser(bytes.NewReader(golden))); err != nil {
				t.Fatalf("Restore(%s): %v", path, err)
			}
			if got, want := m.Get("partitions/1"), g.want.State.leases[2]; !reflect.DeepEqual(got, want) {
				t.Errorf("Get(partitions/1) after Restore = %s, want %s", leaseString(got), leaseString(want))
			}
			if diff := diffPlacement(placementOf(m), placementOfState(g.want.State)); diff != "" {
				t.Errorf("placement after Restore(%s) differs:\n%s", path, diff)
			}
			r := m.Apply(logEntry(g.want.Index+1, g.want.Term, Acquire{Key: "partitions/0", Holder: "w-z", TTL: ttl})).(Result)
			if r.Code != Granted || r.Lease.Token != g.want.State.lastToken+1 {
				t.Errorf("acquire after Restore = %v token %d, want %v token %d", r.Code, r.Lease.Token, Granted, g.want.State.lastToken+1)
			}
			// The key controls of the file still refuse acquisitions.
			next := g.want.Index + 1
			for key, ctl := range g.want.State.controls {
				next++
				want := Prohibited
				if ctl.Disabled {
					want = Disabled
				}
				holder := "w-new"
				if len(ctl.Prohibited) > 0 {
					holder = ctl.Prohibited[0]
				}
				r := m.Apply(logEntry(next, g.want.Term, Acquire{Key: key, Holder: holder, TTL: ttl})).(Result)
				if r.Code != want {
					t.Errorf("acquire of %q by %q after Restore = %v, want %v", key, holder, r.Code, want)
				}
			}
		})
	}
}

func formatSnapshot(s decodedSnapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "index %d term %d last_token %d established_term %d lease_index %d",
		s.Index, s.Term, s.State.lastToken, s.State.establishedTerm, s.State.leaseIndex)
	for _, l := range s.State.leases {
		fmt.Fprintf(&b, "\n  %s", leaseString(l))
	}
	fmt.Fprintf(&b, "\ngroup_index %d drained %q", s.State.groupIndex, s.State.drained)
	for _, g := range s.State.groups {
		fmt.Fprintf(&b, "\n  group %s", groupString(g))
	}
	keys := make([]string, 0, len(s.State.controls))
	for k := range s.State.controls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  control %q %s", k, controlString(s.State.controls[k]))
	}
	if s.State.controls == nil {
		b.WriteString("\n  controls <nil>")
	}
	b.WriteString("\n" + aclString(s.State.acl))
	fmt.Fprintf(&b, "\ncluster_id %q", s.State.clusterID)
	fmt.Fprintf(&b, "\nbackup_key %x", s.State.backupKey)
	return b.String()
}

func TestGoldenCommands(t *testing.T) {
	for _, g := range goldenCommands {
		t.Run(g.file, func(t *testing.T) {
			path := goldenPath(g.file)
			if g.current {
				written := formatCommands(g.file, g.want)
				if *update {
					writeGolden(t, path, written)
				}
				if golden := readGolden(t, path); !bytes.Equal(written, golden) {
					t.Errorf("encoding of the golden commands differs from %s:\n--- got\n%s--- want\n%s"+
						"a change to the command encoding needs a new version; see the comment on update",
						path, written, golden)
				}
				// Every type this build knows is pinned by the file.
				covered := map[Type]bool{}
				for _, c := range g.want {
					covered[c.cmd.Type()] = true
				}
				for t8 := 0; t8 < 256; t8++ {
					if typ := Type(t8); known(typ) && !covered[typ] {
						t.Errorf("type %d has no command in %s", typ, path)
					}
				}
			}

			lines := parseCommands(t, path)
			if len(lines) != len(g.want) {
				t.Fatalf("%s has %d commands, want %d", path, len(lines), len(g.want))
			}
			for i, want := range g.want {
				line := lines[i]
				if line.name != want.name {
					t.Errorf("%s line %d is %q, want %q", path, i+1, line.name, want.name)
					continue
				}
				got, err := Decode(line.data)
				if err != nil {
					t.Errorf("%s: Decode(%s): %v", path, line.name, err)
					continue
				}
				if !reflect.DeepEqual(got, want.cmd) {
					t.Errorf("%s: %s decodes to %#v, want %#v", path, line.name, got, want.cmd)
				}
			}
		})
	}
}

// formatCommands writes the text form of a commands golden file: one
// command per line, its name, a space, and its encoding in hex.
func formatCommands(file string, cmds []namedCommand) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s: encoded fsm commands, one per line: name, then the encoding in hex.\n", file)
	b.WriteString("# Generated by: go test ./fsm -run Golden -update\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "%s %x\n", c.name, Encode(c.cmd))
	}
	return b.Bytes()
}

type goldenLine struct {
	name string
	data []byte
}

func parseCommands(t *testing.T, path string) []goldenLine {
	t.Helper()
	var out []goldenLine
	sc := bufio.NewScanner(bytes.NewReader(readGolden(t, path)))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, hx, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s:%d: want \"name hex\", got %q", path, n, line)
		}
		data, err := hex.DecodeString(hx)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out = append(out, goldenLine{name: name, data: data})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

func writeGolden(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readGolden(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./fsm -run Golden -update to create it)", err)
	}
	return b
}

// TestGoldenFilesAreListed fails when testdata holds a golden file that no
// test reads, such as an old version dropped from the tables.
func TestGoldenFilesAreListed(t *testing.T) {
	listed := map[string]bool{}
	for _, g := range goldenSnapshots {
		listed[g.file] = true
	}
	for _, g := range goldenCommands {
		listed[g.file] = true
	}
	files, err := filepath.Glob(goldenPath("*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("%s is not read by any golden test", f)
		}
	}
}
