package fsm

// goldenClusterID is the cluster id of the golden files.
const goldenClusterID = "5f0c2a9e-7b41-4d3a-9c8e-2f6b1a0d4e73"

// goldenLogV5 is the log behind snapshot-v5.golden: goldenLogV4, then the
// cluster id at index 57 and a second, other id at index 58 that is
// refused (the first one applied stays).
func goldenLogV5() []entry {
	return append(goldenLogV4(), encodeLog([]termCommand{
		{3, ClusterID{ID: goldenClusterID}},                        // 57
		{3, ClusterID{ID: "0a1b2c3d-0000-4000-8000-000000000000"}}, // 58: refused
	})...)
}
