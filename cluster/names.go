package cluster

import "github.com/tenure-io/tenure/fsm"

// validateName checks a group name or a worker id: the rule of keys
// without "/" (1 to 256 bytes of [A-Za-z0-9._:-]). A slash would make the
// name two path segments in the API, and a worker's leases are held as
// "<id>#<suffix>", so an id with any other byte could be mistaken for
// another's.
func validateName(field, name string) error {
	if name == "" || len(name) > fsm.MaxKeyLen {
		return invalid(field, "must be 1 to %d bytes, got %d", fsm.MaxKeyLen, len(name))
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == '/' || fsm.ValidateKey(string(c)) != nil {
			return invalid(field, "byte %d (%q) is not one of [A-Za-z0-9._:-]", i, c)
		}
	}
	return nil
}

// ValidateName checks a group name or a worker id given elsewhere than in
// a command (the HTTP API's authorize checks): the *InvalidError it returns
// names field.
func ValidateName(field, name string) error { return validateName(field, name) }

// ValidWorkerID reports whether id follows the rule of worker ids. A
// worker gossip announces under another id is never planned keys.
func ValidWorkerID(id string) bool { return validateName("worker", id) == nil }
