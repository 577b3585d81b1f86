package fsm

import "sort"

// Secrets of the golden log: the state machine sees their hashes only.
var (
	goldenSecretA = HashSecret("6b1f0c3e9a2d4f5e8c7b6a5d4e3f2a1b")
	goldenSecretB = HashSecret("0f1e2d3c4b5a69788796a5b4c3d2e1f0")
)

// goldenLogV6 is the log behind snapshot-v6.golden: goldenLogV5, then
// acquisitions and releases with lease secrets at indexes 59 to 63: a
// lease held under a secret, an acquisition of it by the same holder
// with another secret (held: nothing changes), a second lease released
// with its secret (freed: its hash goes), and a release of the first
// with the wrong secret (refused).
func goldenLogV6() []entry {
	return append(goldenLogV5(), encodeLog([]termCommand{
		{3, Acquire{Key: "scenes/10", Holder: "w-s", TTL: ttl, Time: wall + 13, SecretHash: goldenSecretA}}, // 59: token 10
		{3, Acquire{Key: "scenes/10", Holder: "w-s", TTL: ttl, Time: wall + 14, SecretHash: goldenSecretB}}, // 60: held
		{3, Acquire{Key: "scenes/11", Holder: "w-s", TTL: ttl, Time: wall + 15, SecretHash: goldenSecretB}}, // 61: token 11
		{3, Release{Key: "scenes/11", Holder: "w-s", Token: 11, SecretHash: goldenSecretB}},                 // 62
		{3, Release{Key: "scenes/10", Holder: "w-s", Token: 10, SecretHash: goldenSecretB}},                 // 63: wrong secret
	})...)
}

// goldenLeasesV6 are the leases that goldenLogV6 leaves, sorted by key.
func goldenLeasesV6() []*Lease {
	l := append(goldenLeasesV4(),
		&Lease{Key: "scenes/10", Holder: "w-s", Token: 10, TTL: ttl, Held: true,
			AcquiredAt: wall + 13, CreateIndex: 59, ModifyIndex: 59, SecretHash: goldenSecretA},
		&Lease{Key: "scenes/11", Holder: "w-s", Token: 11, TTL: ttl, Reason: ReasonReleased,
			AcquiredAt: wall + 15, CreateIndex: 61, ModifyIndex: 62},
	)
	sort.Slice(l, func(i, j int) bool { return l[i].Key < l[j].Key })
	return l
}
