package transport

import (
	"sync"

	"github.com/hashicorp/raft"
)

// guardedPipeline keeps hashicorp/raft's pipelined replication (v1.7) from
// stopping for good after a follower refuses an append.
//
// Raft's pipeline decoder returns at the first answer that is not a
// success (a follower that could not write, a log that does not match) or
// that carries a newer term, and nothing reads the pipeline's answers
// after that. The network transport's pipeline hands each answer over on
// an unbuffered channel, so its reader blocks on the next answer; the
// sender, which may still pick new entries over the decoder's end, then
// blocks handing it its next request, and the pipeline that would free
// both is closed only once the sender returns. The follower keeps getting
// heartbeats, so it never calls an election, and it never gets another
// entry; the leader cannot shut down either.
//
// The guard reads the wrapped pipeline's answers at all times and passes
// them on until one of those that end raft's decoder, then drops the rest
// until the pipeline is closed: the transport never blocks on an answer,
// so the sender never blocks on a request, and sees the decoder's end
// (docs/adr/0020-guarded-raft-pipelines.md).
type guardedPipeline struct {
	raft.AppendPipeline
	out  chan raft.AppendFuture
	done chan struct{}
	once sync.Once
}

// GuardPipeline returns p with its answers read at all times
// (guardedPipeline): a transport's AppendEntriesPipeline wraps what it
// returns with it.
func GuardPipeline(p raft.AppendPipeline) raft.AppendPipeline {
	g := &guardedPipeline{AppendPipeline: p, out: make(chan raft.AppendFuture), done: make(chan struct{})}
	go g.forward(p.Consumer())
	return g
}

// endsDecoder reports whether raft's pipeline decoder returns on the
// answer of f (replication.go, pipelineDecode).
func endsDecoder(f raft.AppendFuture) bool {
	req, resp := f.Request(), f.Response()
	return resp == nil || req == nil || !resp.Success || resp.Term > req.Term
}

func (g *guardedPipeline) forward(in <-chan raft.AppendFuture) {
	decoding := true
	for {
		select {
		case f := <-in:
			if !decoding {
				continue
			}
			select {
			case g.out <- f:
			case <-g.done:
				return
			}
			decoding = !endsDecoder(f)
		case <-g.done:
			return
		}
	}
}

// Consumer returns the answers raft's decoder reads.
func (g *guardedPipeline) Consumer() <-chan raft.AppendFuture { return g.out }

// Close closes the wrapped pipeline and ends the guard.
func (g *guardedPipeline) Close() error {
	g.once.Do(func() { close(g.done) })
	return g.AppendPipeline.Close()
}
