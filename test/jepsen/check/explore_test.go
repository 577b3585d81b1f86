package check
import ("testing";"time";"sync";"fmt")
func TestExplore(t *testing.T) {
	var mu sync.Mutex
	hist := map[int]int{}
	var big []string
	n := 0
	debugStep = func(s lease, c call, r reply, next []lease) {
		mu.Lock(); defer mu.Unlock()
		hist[len(next)]++
		n++
		if len(next) > 2 && len(big) < 6 && n > 100000 {
			str := fmt.Sprintf("from %+v\n  op %+v %+v\n", s, c, r)
			for _, n := range next { str += fmt.Sprintf("  -> %+v\n", n) }
			big = append(big, str)
		}
	}
	c := sim{seed: 4, ops: 5000, procs: 10, keys: 1, lostPct: 15, infoPct: 15, refusedPct: 3}
	r := Register(simulate(c), RegisterConfig{Timeout: 10*time.Second})
	t.Logf("%v %v %v", r.Unknown, hist, r.Notes)
	for _, b := range big { t.Log(b) }
}
