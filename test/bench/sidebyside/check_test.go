package sidebyside

import "testing"

func TestCheckCountsLostDoubledAndSupersededWrites(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rows  []Row
		final int64
		want  Anomalies
	}{
		{"clean: each write read the one before, tokens never go back",
			[]Row{{Seq: 1, Token: 3, Read: 0, Wrote: 1}, {Seq: 2, Token: 3, Read: 1, Wrote: 2}, {Seq: 3, Token: 5, Read: 2, Wrote: 3}}, 3,
			Anomalies{Committed: 3, Final: 3}},
		{"a paused holder wakes and writes from its old read with its old token",
			[]Row{{Seq: 1, Token: 3, Read: 0, Wrote: 1}, {Seq: 2, Token: 5, Read: 1, Wrote: 2}, {Seq: 3, Token: 3, Read: 1, Wrote: 2}}, 2,
			Anomalies{Committed: 3, Final: 2, Lost: 1, Doubled: 1, Superseded: 1}},
		{"rows out of order are read in commit order",
			[]Row{{Seq: 3, Token: 3, Read: 1, Wrote: 2}, {Seq: 1, Token: 3, Read: 0, Wrote: 1}, {Seq: 2, Token: 5, Read: 1, Wrote: 2}}, 2,
			Anomalies{Committed: 3, Final: 2, Lost: 1, Doubled: 1, Superseded: 1}},
		{"no writes", nil, 0, Anomalies{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.rows, tc.final)
			if got != tc.want {
				t.Fatalf("Check = %+v, want %+v", got, tc.want)
			}
			if got.Bad() != (tc.want.Lost+tc.want.Doubled+tc.want.Superseded > 0) {
				t.Fatalf("Bad = %v for %+v", got.Bad(), got)
			}
		})
	}
}
