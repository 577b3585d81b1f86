package cluster

import "github.com/tenure-io/tenure/client/wire"

// validateName checks a group name or a worker id: the rule of keys
// without "/" (1 to 256 bytes of [A-Za-z0-9._:-]). A slash would make the
// name two path segments in the API, and a worker's leases are held as
// "<id>#<suffix>", so an id with any other byte could be mistaken for
// another's.
func validateName(field, name string) error {
	if p := wire.NameProblem(name); p != "" {
		return invalid(field, "%s", p)
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
