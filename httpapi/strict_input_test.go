package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// Input that the API used to take or mangle is refused with the code and
// field of the rule it breaks.
func TestStrictInputRules(t *testing.T) {
	tn := startNode(t)
	for _, tt := range []struct {
		name, method, path, body, code, field string
	}{
		{"empty key", "PUT", "/v1/leases/", `{"holder":"h","ttl":"10s"}`, "invalid_key", "key"},
		{"control character in a holder", "PUT", "/v1/leases/k", "{\"holder\":\"h\\u0007\",\"ttl\":\"10s\"}", "invalid_holder", "holder"},
		{"newline in a holder", "PUT", "/v1/leases/k", `{"holder":"a\nb","ttl":"10s"}`, "invalid_holder", "holder"},
		{"control character in metadata", "PUT", "/v1/leases/k", `{"holder":"h","ttl":"10s","metadata":{"a":"x\u0000y"}}`, "invalid_metadata", "metadata"},
		{"a bad token in a bulk renewal", "POST", "/v1/renew", `{"holder":"h","leases":[{"key":"k","token":0}]}`, "invalid_token", "token"},
		{"a string token in a bulk renewal", "POST", "/v1/renew", `{"holder":"h","leases":[{"key":"k","token":"7"}]}`, "invalid_token", "leases.token"},
		{"a negative token in a bulk renewal", "POST", "/v1/renew", `{"holder":"h","leases":[{"key":"k","token":-1}]}`, "invalid_token", "leases.token"},
		{"a numeric ttl", "PUT", "/v1/leases/k", `{"holder":"h","ttl":10}`, "invalid_ttl", "ttl"},
		{"a slash in a group name", "PUT", "/v1/groups/a%2Fb", `{"keys":["x"]}`, "invalid_name", "name"},
		{"a space in a group name", "PUT", "/v1/groups/a%20b", `{"keys":["x"]}`, "invalid_name", "name"},
		{"a slash in a worker id", "POST", "/v1/workers/a%2Fb/drain?force=true", "", "invalid_worker", "worker"},
		{"a hash in a worker id", "POST", "/v1/workers/a%23b/drain?force=true", "", "invalid_worker", "worker"},
		// A control's body holds the controls alone: the path names the
		// key, and ended is an answer's.
		{"another key in a control's body", "PUT", "/v1/controls/k?force=true", `{"key":"other","disabled":true}`, "invalid_body", "key"},
		{"the same key in a control's body", "PUT", "/v1/controls/k?force=true", `{"key":"k","disabled":true}`, "invalid_body", "key"},
		{"ended in a control's body", "PUT", "/v1/controls/k?force=true", `{"disabled":true,"prohibited":[],"ended":[]}`, "invalid_body", "ended"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, tt.method, tn.url+tt.path, tt.body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("got %d %s, want 400 %s", r.status, r.body, tt.code)
			}
			e := r.apiErr(t)
			if e.Error != tt.code || e.Field != tt.field {
				t.Errorf("got code %q field %q (%s), want %q field %q", e.Error, e.Field, strings.TrimSpace(e.Message), tt.code, tt.field)
			}
		})
	}
}
