package httpapi

import "github.com/tenure-io/tenure/cluster"

// A cluster node serves every concern of the API (NodeOf), its ACL calls
// the ACLs.
var (
	_ Replica   = (*cluster.Node)(nil)
	_ Leases    = (*cluster.Node)(nil)
	_ Groups    = (*cluster.Node)(nil)
	_ Placement = (*cluster.Node)(nil)
	_           = func(n *cluster.Node) ACLs { return n.ACL() }
	_ Members   = (*cluster.Node)(nil)
	_ Operator  = (*cluster.Node)(nil)
	_ Events    = (*cluster.Node)(nil)
)
