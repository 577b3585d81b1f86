package check

import "errors"

// ErrNotFound: the key was never seen, or the server is unknown.
var ErrNotFound = errors.New("not found")
