//go:build linux

package jepsen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenure-io/tenure/client"
)

// strayDelay is how late the other servers' packets reach the leader
// while the stray-transfer nemesis acts. It stays below the leader lease
// of the suite (500ms) with room for the heartbeat interval (50-100ms):
// the leader hears a quorum often enough never to step down by itself,
// and it hears of the newer term strayDelay after the others moved to it.
const strayDelay = 300 * time.Millisecond

// strayTransfer is a leadership transfer that its leader gave up on but
// that happened all the same. hashicorp/raft's leader waits one election
// timeout for a transfer; when it gives up it leads on as before, while
// the TimeoutNow it sent may still arrive: its target then stands for
// election at once, and the other voters vote for it, a transfer being
// the one case in which a voter with a live leader grants its vote. The
// nemesis makes that state directly: it delays every link into the
// leader by strayDelay (climbing in steps so that TCP follows), then
// sends a follower the TimeoutNow the leader would have sent, from the
// leader's namespace to the follower's Raft port, with the leader's own
// certificate. For about strayDelay the
// old leader's Raft says Leader in its old term while the new leader
// commits: a leadership check that trusts anything but a fresh quorum in
// the current round serves stale reads and renewals in that window.
//
// Unlike lagging-leader, the overlap does not hang on how the followers'
// election timers fall: it begins when the target receives the message.
func strayTransfer(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
	l, rest := w.pickLeader(ctx, rng)
	undo := func() error {
		var errs []error
		for _, f := range rest {
			errs = append(errs, w.net.DelayLink(f.name, l.name, 0))
		}
		return errors.Join(errs...)
	}
	if err := delayInto(ctx, w, l, rest, strayDelay, 10); err != nil {
		return nil, "", 0, errors.Join(err, undo())
	}
	// Let the leader settle at the full delay before the transfer.
	if !sleep(ctx, time.Second) {
		return nil, "", 0, errors.Join(ctx.Err(), undo())
	}
	target := rest[rng.IntN(len(rest))]
	desc := fmt.Sprintf("%v -> %s delayed %v, then TimeoutNow from %s to %s", names(rest), l.name, strayDelay, l.name, target.name)
	if err := w.sendTimeoutNow(ctx, l, target); err != nil {
		// A fault in itself (the target may be down), not a harness error.
		desc += fmt.Sprintf(" failed: %v", err)
	}
	return undo, desc, between(rng, 1500*time.Millisecond, 2500*time.Millisecond), nil
}

// sendTimeoutNow sends to's Raft the TimeoutNow RPC that from sends at the
// end of a leadership transfer, from from's namespace over mutual TLS with
// from's certificate.
func (w *world) sendTimeoutNow(ctx context.Context, from, to *proc) error {
	cert, key := w.sec.serverFiles(from.name)
	cfg, err := client.TLSConfig{CAFile: w.sec.caFile, CertFile: cert, KeyFile: key}.Build()
	if err != nil {
		return err
	}
	// Servers are verified by role, not by address (cluster/internal/transport/tls.go);
	// the nemesis need not check whom it reaches at a server's address.
	cfg.InsecureSkipVerify = true
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		return w.net.DialFrom(ctx, from.name, "tcp", addr)
	}
	stream := &dialStream{ctx: ctx, dial: dial, tls: cfg, done: make(chan struct{})}
	trans := raft.NewNetworkTransport(stream, 1, 5*time.Second, io.Discard)
	defer trans.Close()
	fromAddr := fmt.Sprintf("%s:%d", w.net.Addr(from.name), portRaft)
	toAddr := raft.ServerAddress(fmt.Sprintf("%s:%d", w.net.Addr(to.name), portRaft))
	req := &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{
		ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(from.name), Addr: []byte(fromAddr),
	}}
	done := make(chan error, 1)
	go func() { done <- trans.TimeoutNow(raft.ServerID(to.name), toAddr, req, &raft.TimeoutNowResponse{}) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dialStream is a raft.StreamLayer that only dials, with TLS (plain TCP
// when tls is nil): the nemesis sends one RPC and accepts none.
type dialStream struct {
	ctx  context.Context
	dial func(context.Context, string) (net.Conn, error)
	tls  *tls.Config
	done chan struct{}
}

func (s *dialStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	raw, err := s.dial(ctx, string(addr))
	if err != nil || s.tls == nil {
		return raw, err
	}
	conn := tls.Client(raw, s.tls)
	if err := conn.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return conn, nil
}

func (s *dialStream) Accept() (net.Conn, error) {
	<-s.done
	return nil, net.ErrClosed
}

func (s *dialStream) Close() error {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	return nil
}

func (s *dialStream) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
