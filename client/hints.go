package client

import "strings"

// Whom the client follows when an answer names the leader.
//
// An answer's X-Tenure-Leader-Addr header is not authenticated: over plain
// HTTP anyone who can answer in a server's place can write it. Following
// an address only because an answer names it would send the next requests,
// with the ACL token in every one, wherever that answer pointed. So the
// client follows a named leader only when it is one of the configured
// Addresses, or when the client verifies the certificate of whoever answers
// there against a CA it was given (TLSConfig.CAFile, or RootCAs of
// TLSConfig.Config): then only a holder of a certificate from the cluster's
// CA can answer, and the token goes nowhere else. Config.TrustLeaderHints
// lifts the rule, for networks where every answer comes from a server.
// A leader that is not followed is still reached: the server that was
// asked forwards writes and renewals to it, at the cost of one hop.

// leaderTrust returns the rule for leader addresses outside Addresses:
// nil when only configured addresses are followed.
func (c *Config) leaderTrust() func(leader string) bool {
	if c.TrustLeaderHints {
		return func(string) bool { return true }
	}
	if c.HTTPClient != nil || !c.TLS.verifiesWithOwnCA() {
		return nil
	}
	return func(leader string) bool { return strings.HasPrefix(leader, "https://") }
}

// verifiesWithOwnCA reports whether the client's connections verify the
// servers' certificates against CAs given in the configuration, not the
// system's roots.
func (t TLSConfig) verifiesWithOwnCA() bool {
	if t.Config != nil {
		if t.Config.InsecureSkipVerify {
			return false
		}
		return t.CAFile != "" || t.Config.RootCAs != nil
	}
	return t.CAFile != ""
}
