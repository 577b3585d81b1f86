package cluster

import "github.com/tenure-io/tenure/cluster/internal/check"

// ValidateName checks a group name or a worker id given elsewhere than in
// a command (the HTTP API's authorize checks): the *InvalidError it returns
// names field.
func ValidateName(field, name string) error { return check.Name(field, name) }
