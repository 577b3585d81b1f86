package fsm

import "time"

// goldenBalance is the balance of group partitions in the version 8 golden
// files.
var goldenBalance = Balance{ByLoad: true, Threshold: 1.2, MoveBudget: 16, MoveInterval: 30 * time.Second,
	Weights: map[string]float64{"partitions/2": 2.5, "partitions/0": 0.75}, MaxMoving: 4}

// goldenLogV8 is the log behind snapshot-v8.golden: goldenLogV7, then
// the balance of partitions (index 66).
func goldenLogV8() []entry {
	return append(goldenLogV7(), encodeLog([]termCommand{
		{3, GroupBalance{Name: "partitions", Balance: goldenBalance}}, // 66
	})...)
}

// goldenStateV8 is the state that goldenLogV8 leaves.
func goldenStateV8() state {
	st := goldenStateV4(11, 62, goldenLeasesV6(), goldenClusterID, goldenBackupKey)
	st.groupIndex = 66
	p := st.groups[1]
	b := goldenBalance
	p.Balance, p.ModifyIndex = &b, 66
	return st
}
