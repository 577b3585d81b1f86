package fsm

import (
	"fmt"
	"sort"
)

func encodePlacement(e *encoder, st state) {
	sort.Slice(st.groups, func(i, j int) bool { return st.groups[i].Name < st.groups[j].Name })
	e.uvarint(st.groupIndex)
	e.uvarint(uint64(len(st.groups)))
	for _, g := range st.groups {
		g.encode(e)
	}
	encodeSorted(e, st.controls, func(k string, c KeyControl) {
		e.string(k)
		e.bool(c.Disabled)
		e.strings(c.Prohibited)
	})
	drained := append([]string(nil), st.drained...)
	sort.Strings(drained)
	e.strings(drained)
}

// encode writes the group as the placement part of a snapshot keeps it
// (format version 2 on).
func (g *Group) encode(e *encoder) {
	e.string(g.Name)
	e.strings(g.Keys)
	e.varint(int64(g.MaxPerWorker))
	e.stringMap(g.Assignment)
	e.uvarint(g.CreateIndex)
	e.uvarint(g.ModifyIndex)
	e.uvarint(g.AssignIndex)
}

func decodePlacement(d *decoder, st *state) {
	st.groupIndex = d.uvarint()
	n := d.count("groups")
	for i := uint64(0); i < n && d.err == nil; i++ {
		g := &Group{Name: d.string(), Keys: d.strings(), MaxPerWorker: int(d.varint()), Assignment: d.stringMap(),
			CreateIndex: d.uvarint(), ModifyIndex: d.uvarint(), AssignIndex: d.uvarint()}
		if i > 0 && g.Name <= st.groups[len(st.groups)-1].Name {
			d.fail(fmt.Errorf("group %q out of order", g.Name))
		}
		if !strictlySorted(g.Keys) {
			d.fail(fmt.Errorf("keys of group %q out of order", g.Name))
		}
		st.groups = append(st.groups, g)
	}
	st.controls = make(map[string]KeyControl)
	d.sortedEntries("key controls", func(key string) {
		ctl := KeyControl{Disabled: d.bool(), Prohibited: d.strings()}
		if !strictlySorted(ctl.Prohibited) {
			d.fail(fmt.Errorf("prohibited holders of key %q out of order", key))
		}
		st.controls[key] = ctl
	})
	st.drained = d.strings()
	if !strictlySorted(st.drained) {
		d.fail(fmt.Errorf("drained workers out of order"))
	}
}
