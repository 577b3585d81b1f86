package httpapi

import (
	"testing"
)

// Input that the API used to take or mangle is refused with the code and
// field of the rule it breaks.
func TestStrictInputRules(t *testing.T) {
	tn := startNode(t)
	checkRefusals(t, tn.url, []refusal{
		{"empty key", "PUT", "/v1/leases/", `{"holder":"h","ttl":"10s"}`, 400, "invalid_key", "key", ""},
		{"control character in a holder", "PUT", "/v1/leases/k", "{\"holder\":\"h\\u0007\",\"ttl\":\"10s\"}", 400, "invalid_holder", "holder", ""},
		{"newline in a holder", "PUT", "/v1/leases/k", `{"holder":"a\nb","ttl":"10s"}`, 400, "invalid_holder", "holder", ""},
		{"control character in metadata", "PUT", "/v1/leases/k", `{"holder":"h","ttl":"10s","metadata":{"a":"x\u0000y"}}`, 400, "invalid_metadata", "metadata", ""},
		{"a bad token in a bulk renewal", "POST", "/v1/renew", `{"holder":"h","leases":[{"key":"k","token":0}]}`, 400, "invalid_token", "token", ""},
		{"a string token in a bulk renewal", "POST", "/v1/renew", `{"holder":"h","leases":[{"key":"k","token":"7"}]}`, 400, "invalid_token", "leases.token", ""},
		{"a negative token in a bulk renewal", "POST", "/v1/renew", `{"holder":"h","leases":[{"key":"k","token":-1}]}`, 400, "invalid_token", "leases.token", ""},
		{"a numeric ttl", "PUT", "/v1/leases/k", `{"holder":"h","ttl":10}`, 400, "invalid_ttl", "ttl", ""},
		{"a slash in a group name", "PUT", "/v1/groups/a%2Fb", `{"keys":["x"]}`, 400, "invalid_name", "name", ""},
		{"a space in a group name", "PUT", "/v1/groups/a%20b", `{"keys":["x"]}`, 400, "invalid_name", "name", ""},
		{"a slash in a worker id", "POST", "/v1/workers/a%2Fb/drain?force=true", "", 400, "invalid_worker", "worker", ""},
		{"a hash in a worker id", "POST", "/v1/workers/a%23b/drain?force=true", "", 400, "invalid_worker", "worker", ""},
		// A control's body holds the controls alone: the path names the
		// key, and ended is an answer's.
		{"another key in a control's body", "PUT", "/v1/controls/k?force=true", `{"key":"other","disabled":true}`, 400, "invalid_body", "key", ""},
		{"the same key in a control's body", "PUT", "/v1/controls/k?force=true", `{"key":"k","disabled":true}`, 400, "invalid_body", "key", ""},
		{"ended in a control's body", "PUT", "/v1/controls/k?force=true", `{"disabled":true,"prohibited":[],"ended":[]}`, 400, "invalid_body", "ended", ""},
	})
}
