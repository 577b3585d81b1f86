package client

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// EventFilter selects events. The zero value selects every event.
type EventFilter struct {
	// Prefix matches events whose key, group or worker starts with it.
	// With ACLs on, the token needs read on it ("" means every name).
	Prefix string
	// Types, when not empty, are the event types to return (EventAcquired
	// …).
	Types []string
	// WaitTime bounds each blocking request of Watch; zero means one
	// minute. A watch whose server is cut off from the cluster moves on to
	// another server after at most this long.
	WaitTime time.Duration
}

func (f EventFilter) params() map[string]string {
	return map[string]string{"prefix": f.Prefix, "type": strings.Join(f.Types, ",")}
}

// defaultWatchWait is the wait of each request of a Watch.
const defaultWatchWait = time.Minute

// EventsAPI reads the event history (GET /v1/events). Get it with
// Client.Events.
type EventsAPI struct{ c *Client }

// Events returns the calls of the event history.
func (c *Client) Events() *EventsAPI { return &EventsAPI{c: c} }

// List returns the oldest events that the answering server still holds
// (at most 1000, a log entry's events never split) and the index to pass
// to Since or Watch to continue after them. It does not wait.
func (e *EventsAPI) List(ctx context.Context, f EventFilter) ([]Event, uint64, error) {
	return e.get(ctx, f.params(), 0)
}

// Since returns the events after index after (at most 1000) and the index
// to continue from, without waiting. An *APIError matching ErrCompacted
// (its OldestIndex says from where the server still serves) means events
// after after are gone.
func (e *EventsAPI) Since(ctx context.Context, after uint64, f EventFilter) ([]Event, uint64, error) {
	q := f.params()
	q["index"] = strconv.FormatUint(after, 10)
	q["wait"] = "0s"
	return e.get(ctx, q, 0)
}

func (e *EventsAPI) get(ctx context.Context, q map[string]string, wait time.Duration) ([]Event, uint64, error) {
	out, _, err := call[wire.EventList](ctx, e.c, &request{method: http.MethodGet, path: "/v1/events", query: q, wait: wait}, "events")
	if err != nil {
		return nil, 0, err
	}
	return out.Events, out.Index, nil
}

// WatchResponse is one delivery of Watch: events in index order, all with
// an index above those of earlier deliveries, and Index, the index to
// resume from. The last delivery before the channel closes may carry Err
// instead.
type WatchResponse struct {
	Events []Event
	Index  uint64
	// Err ends the watch: ErrCompacted (errors.Is; the *APIError's
	// OldestIndex says where the history starts now) when the watch fell
	// behind the server's history, or an error that retrying cannot fix
	// (ErrPermissionDenied, ErrInvalid …).
	Err error
}

// Watch follows the event history from index from on: it delivers every
// event after from that matches f, in index order, each exactly once,
// until ctx is done (the channel is then closed without an error) or an
// error that retrying cannot fix (delivered as the last WatchResponse's
// Err, then the channel is closed).
//
// It runs one goroutine that makes blocking requests, each to the server
// that answered last or the leader it names (the client's usual routing).
// After a failure it retries, with the client's backoff and from the last
// index it delivered, on the next server, for as long as ctx lasts: a
// leader failover or a restarted server costs no event. Every server
// produces the same events for the same index, so moving between servers
// neither repeats nor skips one. A watch that falls behind the history of
// the server it reaches (a tiny history, or a server that restored a newer
// snapshot) ends with ErrCompacted: read the current state, then watch
// again from the *APIError's OldestIndex, or the state's index if that is
// higher (see ExampleEventsAPI_Watch).
//
// The caller must keep receiving until the channel is closed, or cancel
// ctx.
func (e *EventsAPI) Watch(ctx context.Context, from uint64, f EventFilter) <-chan WatchResponse {
	out := make(chan WatchResponse)
	wait := f.WaitTime
	if wait <= 0 {
		wait = defaultWatchWait
	}
	go func() {
		defer close(out)
		cursor := from
		failures := 0
		for ctx.Err() == nil {
			q := f.params()
			q["index"] = strconv.FormatUint(cursor, 10)
			q["wait"] = wait.String()
			evs, next, err := e.get(ctx, q, wait)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				if retry, _, after := classify(err, false); retry {
					failures++
					e.c.log.Debug("event watch failed, retrying", "index", cursor, "error", err)
					if e.c.sleep(ctx, e.c.backoff(failures, after)) != nil {
						return
					}
					continue
				}
				select {
				case out <- WatchResponse{Index: cursor, Err: err}:
				case <-ctx.Done():
				}
				return
			}
			failures = 0
			// Never again, never out of order.
			fresh := slices.DeleteFunc(evs, func(ev Event) bool { return ev.Index <= cursor })
			if len(fresh) > 0 {
				cursor = fresh[len(fresh)-1].Index
			}
			cursor = max(cursor, next)
			if len(fresh) == 0 {
				continue
			}
			select {
			case out <- WatchResponse{Events: fresh, Index: cursor}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
