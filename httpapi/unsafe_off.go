//go:build !tenure_unsafe_renew

package httpapi

import "net/http"

// renewer serves renewals like leader: the established leader answers
// them, every other node forwards them. Builds with the tag
// tenure_unsafe_renew (a negative control of the fault suite, never a
// release) replace it (unsafe_on.go).
func (s *Server) renewer(h handlerFunc) http.Handler { return s.leader(h) }
