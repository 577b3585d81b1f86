package transport

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// httpAddrTTL is how long a learned address is used before it is asked
// again (in the background, the old one served meanwhile);
// httpAddrRetry spaces the questions to a server that did not answer.
const (
	httpAddrTTL   = 30 * time.Second
	httpAddrRetry = time.Second
)

// HTTPAddrs caches the HTTP addresses that servers gave, each bound to the
// id and Raft address it was asked at (docs/adr/0026). Its methods are
// safe for concurrent use.
type HTTPAddrs struct {
	ask func(raft.ServerID, raft.ServerAddress) (string, error)

	mu      sync.Mutex
	entries map[raft.ServerID]*httpAddrEntry
	// changed, if not nil, is called after an answer changed an address.
	changed func()
}

type httpAddrEntry struct {
	raftAddr raft.ServerAddress
	http     string    // "" until an answer came
	at       time.Time // of the last question
	asking   bool
	ready    chan struct{} // closed when the question in flight ends
}

// NewHTTPAddrs asks servers with ask; changed, if not nil, is called after
// an answer changed an address.
func NewHTTPAddrs(ask func(raft.ServerID, raft.ServerAddress) (string, error), changed func()) *HTTPAddrs {
	return &HTTPAddrs{ask: ask, changed: changed, entries: map[raft.ServerID]*httpAddrEntry{}}
}

// Get returns the HTTP address that server id, at raftAddr, gave, and
// asks it (again) in the background when it has none, or an old one: it
// never blocks. "" until the server has answered.
func (h *HTTPAddrs) Get(id raft.ServerID, raftAddr raft.ServerAddress) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries[id]
	if e == nil || e.raftAddr != raftAddr {
		// Another address is another server as far as this cache
		// knows: nothing it said before counts.
		e = &httpAddrEntry{raftAddr: raftAddr}
		h.entries[id] = e
		if len(h.entries) > 1024 { // bounded: ids come from the configuration
			clear(h.entries)
			h.entries[id] = e
		}
	}
	wait := httpAddrTTL
	if e.http == "" {
		wait = httpAddrRetry
	}
	if !e.asking && time.Since(e.at) >= wait {
		h.startLocked(id, e)
	}
	return e.http
}

// Wait returns the address as Get does, but when there is none yet it
// waits for the question in flight, until ctx ends.
func (h *HTTPAddrs) Wait(ctx context.Context, id raft.ServerID, raftAddr raft.ServerAddress) string {
	if a := h.Get(id, raftAddr); a != "" {
		return a
	}
	h.mu.Lock()
	e := h.entries[id]
	var ready chan struct{}
	if e != nil && e.raftAddr == raftAddr && e.asking {
		ready = e.ready
	}
	h.mu.Unlock()
	if ready == nil {
		return ""
	}
	select {
	case <-ready:
	case <-ctx.Done():
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.entries[id]; e != nil && e.raftAddr == raftAddr {
		return e.http
	}
	return ""
}

func (h *HTTPAddrs) startLocked(id raft.ServerID, e *httpAddrEntry) {
	e.asking, e.at, e.ready = true, time.Now(), make(chan struct{})
	go func() {
		addr, err := h.ask(id, e.raftAddr)
		h.mu.Lock()
		changed := false
		if err == nil && h.entries[id] == e {
			changed = e.http != addr
			e.http = addr
		}
		e.asking = false
		close(e.ready)
		notify := h.changed
		h.mu.Unlock()
		if changed && notify != nil {
			notify()
		}
	}()
}
