package cluster

import "github.com/tenure-io/tenure/cluster/internal/check"

// validateName checks a group name or a worker id (check.Name).
func validateName(field, name string) error { return check.Name(field, name) }

// ValidateName checks a group name or a worker id given elsewhere than in
// a command (the HTTP API's authorize checks): the *InvalidError it returns
// names field.
func ValidateName(field, name string) error { return validateName(field, name) }

// ValidWorkerID reports whether id follows the rule of worker ids. A
// worker gossip announces under another id is never planned keys.
func ValidWorkerID(id string) bool { return validateName("worker", id) == nil }
