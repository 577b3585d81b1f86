package httpapi

import (
	"net/http"
	"testing"
)

// Bodies that encoding/json alone would accept but read other than the
// sender meant are refused with the field named: a field whose name only
// matches without regard to case, a field given twice (the last would
// win), invalid UTF-8 (it would be replaced silently); nested objects and
// arrays of objects too. Maps keep their keys as sent.
func TestStrictBodies(t *testing.T) {
	tn := startNode(t)
	checkRefusals(t, tn.url, []refusal{
		{"case of a field", "PUT", "/v1/leases/k", `{"Holder":"h","ttl":"10s"}`, 400, "invalid_body", "Holder", `did you mean "holder"`},
		{"a field twice", "PUT", "/v1/leases/k", `{"holder":"a","ttl":"10s","holder":"b"}`, 400, "invalid_body", "holder", "appears twice"},
		{"invalid UTF-8", "PUT", "/v1/leases/k", "{\"holder\":\"h\xff\",\"ttl\":\"10s\"}", 400, "invalid_body", "body", "UTF-8"},
		{"case inside an array", "POST", "/v1/renew", `{"holder":"h","leases":[{"key":"k","Token":1}]}`, 400, "invalid_body", "leases[].Token", `did you mean "token"`},
		{"twice inside an array", "POST", "/v1/renew", `{"holder":"h","leases":[{"key":"k","token":1,"key":"j"}]}`, 400, "invalid_body", "leases[].key", "appears twice"},
		{"a metadata key twice", "PUT", "/v1/leases/k", `{"holder":"h","ttl":"10s","metadata":{"a":"1","a":"2"}}`, 400, "invalid_body", "metadata.a", "appears twice"},
	})
	// Metadata keys are the sender's: any case is kept as it is.
	r := do(t, "PUT", tn.url+"/v1/leases/k", `{"holder":"h","ttl":"10s","metadata":{"Zone":"a"}}`)
	r.wantStatus(t, "metadata with a capital", http.StatusCreated)
	if l := r.lease(t); l.Metadata["Zone"] != "a" {
		t.Errorf("metadata %v, want Zone kept", l.Metadata)
	}
}
