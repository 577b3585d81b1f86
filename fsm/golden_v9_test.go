package fsm

// goldenLogV9 is the log behind snapshot-v9.golden: goldenLogV8, then a
// plan with keys to prepare (index 67: partitions/3's entry names its own
// target and is dropped) and a worker's word that it prepared two of them
// (68: partitions/3 was never prepared for w-c and stays with w-a). (w-b
// is drained in this log: its reports would be ignored.)
func goldenLogV9() []entry {
	return append(goldenLogV8(), encodeLog([]termCommand{
		{3, Assign{Group: "partitions", Assignment: map[string]string{"partitions/0": "w-a", "partitions/2": "w-c", "partitions/3": "w-a"},
			Prepare: map[string]string{"partitions/0": "w-c", "partitions/2": "w-a", "partitions/3": "w-a"}, Base: 17}}, // 67
		{3, Prepared{Group: "partitions", Worker: "w-c", Keys: []string{"partitions/0", "partitions/3"}}}, // 68
	})...)
}

// goldenStateV9 is the state that goldenLogV9 leaves.
func goldenStateV9() state {
	st := goldenStateV8()
	st.groupIndex = 68
	p := st.groups[1]
	p.Assignment = map[string]string{"partitions/0": "w-c", "partitions/2": "w-c", "partitions/3": "w-a"}
	p.Prepare = map[string]string{"partitions/2": "w-a"}
	p.ModifyIndex, p.AssignIndex = 68, 68
	return st
}
