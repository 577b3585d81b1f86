package httpapi

import (
	"time"

	"github.com/tenure-io/tenure/client/wire"

	"github.com/tenure-io/tenure/cluster"
)

// The JSON bodies of the API are the types of package client (its
// wire.go); this file only converts the cluster's views into them.

// leaseOut is a lease as the API answers it.
func leaseOut(v cluster.LeaseView) *wire.LeaseInfo {
	l := v.Lease
	out := &wire.LeaseInfo{
		Key:         l.Key,
		Holder:      l.Holder,
		Token:       l.Token,
		TTL:         l.TTL,
		State:       wire.StateFree,
		Metadata:    l.Metadata,
		Reason:      l.Reason.String(),
		Ending:      l.Ending.String(),
		ModifyIndex: l.ModifyIndex,
	}
	if l.Held {
		out.State = wire.StateHeld
	}
	if l.AcquiredAt != 0 {
		out.AcquiredAt = time.Unix(0, l.AcquiredAt)
	}
	if v.Tracked {
		out.HasExpiresIn = true
		out.ExpiresIn = v.ExpiresIn.Round(time.Millisecond)
		out.RenewedAt = v.RenewedAt
	}
	return out
}

// statusOut is a node's status as the API answers it.
func statusOut(st cluster.Status) wire.NodeStatus {
	out := wire.NodeStatus{
		NodeID:         st.NodeID,
		ClusterID:      st.ClusterID,
		Role:           st.Role,
		LeaderID:       st.LeaderID,
		LeaderHTTPAddr: st.LeaderHTTPAddr,
		Term:           st.Term,
		LastLogIndex:   st.LastLogIndex,
		CommitIndex:    st.CommitIndex,
		AppliedIndex:   st.AppliedIndex,
		LastToken:      st.LastToken,
		LastContact:    st.LastContact.Round(time.Millisecond),
		Ready:          st.Ready,
		Servers:        []wire.ServerInfo{},

		FailureTolerance: st.FailureTolerance,

		NotReady:          st.Health.Problem,
		LeaderCommitIndex: st.Health.LeaderCommit,
		BehindEntries:     st.Health.BehindEntries,
		BehindFor:         st.Health.BehindFor.Round(time.Millisecond).String(),
		DiskWriteErrors:   st.Health.DiskWriteErrors,
		LastDiskError:     st.Health.LastDiskError,

		SnapshotWriteErrors: st.Health.SnapshotWriteErrors,
		LastSnapshotError:   st.Health.LastSnapshotError,
	}
	if st.LastContact < 0 {
		out.LastContact = -1 // never: Round would make it 0
	}
	for _, srv := range st.Servers {
		suffrage := "nonvoter"
		if srv.Voter {
			suffrage = "voter"
		}
		out.Servers = append(out.Servers, wire.ServerInfo{ID: srv.ID, RaftAddr: srv.RaftAddr, HTTPAddr: srv.HTTPAddr, Suffrage: suffrage, Leader: srv.Leader, Healthy: srv.Healthy})
	}
	return out
}

// memberOut is a gossip member as the API answers it. The conversion of
// the metadata compiles only while the server's gossip metadata and the
// client's declare the same fields.
func memberOut(m cluster.Member) wire.Member {
	return wire.Member{Name: m.Name, Addr: m.Addr, Status: m.Status, Role: m.Meta.Role, Meta: m.Meta}
}

// keyringOut is the gossip keyring as the API answers it.
func keyringOut(views []cluster.KeyringView, members int, unreached []string) wire.Keyring {
	out := wire.Keyring{Keys: []wire.KeyringKey{}, Members: members, Unreached: unreached}
	for _, v := range views {
		out.Keys = append(out.Keys, wire.KeyringKey{Fingerprint: v.Fingerprint, GossipKey: v.Key, Holders: v.Holders, Primary: v.Primary})
	}
	return out
}
