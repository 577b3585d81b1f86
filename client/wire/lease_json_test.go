package wire

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// randomText mixes what JSON must escape (quotes, backslashes, control
// characters, U+2028, invalid UTF-8) with HTML characters and other text.
func randomText(rng *rand.Rand) string {
	parts := []string{"a", "Z", "/", "#", "\"", "\\", "\n", "\t", "\x00", "\x1f", "\x7f", "<", ">", "&", "é", "日本", "\u2028", "\u2029", "\xff", "\xe2\x82", "😀", " "}
	var b strings.Builder
	for n := rng.IntN(12); n > 0; n-- {
		b.WriteString(parts[rng.IntN(len(parts))])
	}
	return b.String()
}

func randomLease(rng *rand.Rand) LeaseInfo {
	l := LeaseInfo{Key: randomText(rng), Holder: randomText(rng), Token: rng.Uint64(), TTL: time.Duration(rng.Int64N(int64(time.Hour))),
		State: LeaseState(randomText(rng)), ModifyIndex: rng.Uint64(), Reason: randomText(rng), Ending: randomText(rng)}
	if rng.IntN(2) == 0 {
		l.HasExpiresIn, l.ExpiresIn = true, time.Duration(rng.Int64N(int64(time.Minute)))
	}
	if rng.IntN(2) == 0 {
		l.AcquiredAt = time.Unix(rng.Int64N(2e9), rng.Int64N(1e9))
		l.RenewedAt = time.Unix(rng.Int64N(2e9), rng.Int64N(1e9)).In(time.FixedZone("x", 3600))
	}
	if n := rng.IntN(4); n > 0 {
		l.Metadata = map[string]string{}
		for ; n > 0; n-- {
			l.Metadata[randomText(rng)] = randomText(rng)
		}
	}
	return l
}

// reflected is the lease encoded by encoding/json from its wire struct,
// the way the server wrote it before AppendJSON.
func reflected(t *testing.T, l LeaseInfo) any {
	t.Helper()
	w := leaseJSON{Key: l.Key, Holder: l.Holder, Token: l.Token, TTL: l.TTL.String(), State: l.State,
		AcquiredAt: formatTime(l.AcquiredAt), RenewedAt: formatTime(l.RenewedAt), Metadata: l.Metadata,
		Reason: l.Reason, Ending: l.Ending, ModifyIndex: l.ModifyIndex}
	if l.HasExpiresIn {
		w.ExpiresIn = l.ExpiresIn.String()
	}
	raw, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return decodeAny(t, raw)
}

func decodeAny(t *testing.T, raw []byte) any {
	t.Helper()
	if !json.Valid(raw) {
		t.Fatalf("not valid JSON: %q", raw)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The hand-written encoder writes what encoding/json writes of the wire
// struct (the same JSON values), for every kind of text.
func TestLeaseAppendJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		l := randomLease(rng)
		got := decodeAny(t, l.appendJSON(nil))
		if want := reflected(t, l); !reflect.DeepEqual(got, want) {
			t.Fatalf("lease %d:\n got %v\nwant %v", i, got, want)
		}
	}
}

func TestRenewManyResultsAppendJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 300; i++ {
		var r RenewManyResults
		for n := rng.IntN(5); n > 0; n-- {
			res := RenewResultBody{Key: randomText(rng), Token: rng.Uint64(), OK: rng.IntN(2) == 0,
				Error: randomText(rng), Message: randomText(rng), Reason: randomText(rng)}
			if rng.IntN(2) == 0 {
				l := randomLease(rng)
				res.Lease = &l
			}
			r.Results = append(r.Results, res)
		}
		// encoding/json, with the lease by its wire struct.
		type shadow struct {
			Key     string `json:"key"`
			Token   uint64 `json:"token"`
			OK      bool   `json:"ok"`
			Lease   any    `json:"lease,omitempty"`
			Error   string `json:"error,omitempty"`
			Message string `json:"message,omitempty"`
			Reason  string `json:"reason,omitempty"`
		}
		want := struct {
			Results []shadow `json:"results"`
		}{Results: []shadow{}}
		for _, res := range r.Results {
			s := shadow{Key: res.Key, Token: res.Token, OK: res.OK, Error: res.Error, Message: res.Message, Reason: res.Reason}
			if res.Lease != nil {
				s.Lease = reflected(t, *res.Lease)
			}
			want.Results = append(want.Results, s)
		}
		raw, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if got, w := decodeAny(t, r.AppendJSON(nil)), decodeAny(t, raw); !reflect.DeepEqual(got, w) {
			t.Fatalf("results %d:\n got %v\nwant %v", i, got, w)
		}
	}
}

// The answer of a bulk renewal decodes back to what was encoded.
func TestRenewManyResultsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 300; i++ {
		var in RenewManyResults
		in.Results = []RenewResultBody{}
		for n := rng.IntN(5); n > 0; n-- {
			res := RenewResultBody{Key: "k" + strconv.Itoa(n), Token: rng.Uint64(), OK: rng.IntN(2) == 0, Reason: "expired"}
			if rng.IntN(2) == 0 {
				l := randomLease(rng)
				l.Key, l.Holder, l.State, l.Reason, l.Ending = "k", "h", StateHeld, "", ""
				l.Metadata = map[string]string{"a": "b"}
				l.AcquiredAt, l.RenewedAt = l.AcquiredAt.UTC(), l.RenewedAt.UTC()
				res.Lease = &l
			}
			in.Results = append(in.Results, res)
		}
		var out RenewManyResults
		if err := json.Unmarshal(in.AppendJSON(nil), &out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("round trip %d:\n  in %+v\n out %+v", i, in, out)
		}
	}
}
