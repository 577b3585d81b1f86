package wire

import (
	"encoding/json"
	"math"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// wireTypes are the JSON bodies of the API, as this package declares them (RevokedLease through its wire form).
var wireTypes = []any{
	AcquireBody{}, LeaseRefBody{}, RenewManyBody{}, RenewManyResults{}, LeaseList{}, ErrorBody{},
	MemberList{}, MemberMeta{}, TransferBody{}, TransferResult{}, Health{}, Readiness{},
	NodeStatus{}, SnapshotInfo{}, GroupSpec{}, GroupSummary{}, Group{}, GroupList{}, GroupKeysBody{},
	MaxPerWorkerBody{}, Assignment{}, KeyControl{}, DrainBody{}, KeyringBody{}, KeyringMessage{}, Keyring{},
	ACLToken{}, ACLTokenSpec{}, ACLTokenList{}, ACLRule{}, ACLPolicy{}, ACLPolicySpec{}, ACLPolicyList{}, WorkerRegistration{},
	ACLAuthorizeBody{}, ACLAuthorizeResults{},
	PromoteResult{}, DrainResult{}, WorkerList{},
	KeyControlBody{}, KeyControlEdit{},
	PromoteResult{}, EventList{}, CompactedBody{},
	RevokeResult{}, revokedLeaseJSON{}, RestoreResult{},
}

// jsonNames collects the JSON field names of t and of the structs it holds.
func jsonNames(t reflect.Type, into map[string]string, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			into[name] = t.Name() + "." + f.Name
		}
		jsonNames(f.Type, into, seen)
	}
}

// docs/http-api.md is the contract for people and other languages: every
// error code and every JSON field of the bodies this package declares is
// in it, so neither can be added without being documented.
func TestHTTPAPIDocNamesEveryCodeAndField(t *testing.T) {
	doc, err := os.ReadFile("../../docs/http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	named := func(name string) bool {
		return regexp.MustCompile("(`|\")" + regexp.QuoteMeta(name) + "(`|\")").MatchString(text)
	}
	for _, code := range ErrorCodes() {
		if !named(code) {
			t.Errorf("error code %q is not in docs/http-api.md", code)
		}
	}
	fields := map[string]string{}
	seen := map[reflect.Type]bool{}
	for _, v := range wireTypes {
		jsonNames(reflect.TypeOf(v), fields, seen)
	}
	jsonNames(reflect.TypeOf(Member{}), fields, seen)
	// A lease encodes itself (its MarshalJSON): its names are
	// those of a lease with every field set.
	now := time.Now()
	full, err := json.Marshal(LeaseInfo{Key: "k", Holder: "h", Token: 1, TTL: time.Second, State: StateHeld, ExpiresIn: time.Second, HasExpiresIn: true,
		AcquiredAt: now, RenewedAt: now, Metadata: map[string]string{"m": "v"}, Reason: "r", Ending: "e", ModifyIndex: 1, Secret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	var lease map[string]any
	if err := json.Unmarshal(full, &lease); err != nil {
		t.Fatal(err)
	}
	for name := range lease {
		fields[name] = "LeaseInfo"
	}
	for name, where := range fields {
		if !named(name) {
			t.Errorf("JSON field %q (%s) is not in docs/http-api.md", name, where)
		}
	}
}

// A worker's holders are its id, '#' and a suffix; any other holder is
// its own worker id.
func TestWorkerOf(t *testing.T) {
	for holder, want := range map[string]string{"w1#9f3a": "w1", "a#b#c": "a#b", "host-1-42": "host-1-42", "#x": "#x", "": ""} {
		if got := WorkerOf(holder); got != want {
			t.Errorf("WorkerOf(%q) = %q, want %q", holder, got, want)
		}
	}
}

// A load follows the rule from 0 to MaxLoad, and NaN does not.
func TestLoadProblem(t *testing.T) {
	for load, ok := range map[float64]bool{0: true, 12.5: true, MaxLoad: true, -1: false, 2 * MaxLoad: false, math.NaN(): false, math.Inf(1): false} {
		if got := LoadProblem(load) == ""; got != ok {
			t.Errorf("LoadProblem(%v) = %q, want ok %v", load, LoadProblem(load), ok)
		}
	}
}
