//go:build tenure_unsafe_renew

package httpapi

import "net/http"

// renewer, in this build, serves renewals on whichever node receives them,
// without forwarding: with cluster's renewal policy of this build, every
// node answers them from its own state. A deliberate bug, the negative
// control that the fault suite must catch (test/jepsen); the cluster
// package prints the warning.
func (s *Server) renewer(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			writeError(w, err)
		}
	})
}
