package client

import "fmt"

// checkName applies the cluster's rule for group names and worker ids: 1
// to 256 bytes of [A-Za-z0-9._:-] (the rule of keys without "/"). The
// cluster refuses other names; a worker checks its own before it starts,
// so that it never announces an id the balancer would ignore.
func checkName(field, name string) error {
	if name == "" || len(name) > 256 {
		return fmt.Errorf("%w: %s: must be 1 to 256 bytes, got %d", ErrInvalid, field, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return fmt.Errorf("%w: %s %q: byte %d (%q) is not one of [A-Za-z0-9._:-]", ErrInvalid, field, name, i, c)
		}
	}
	return nil
}
