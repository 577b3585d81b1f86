package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

const (
	// placeBeliefInterval is how often a handler records that it owns its
	// key.
	placeBeliefInterval = 100 * time.Millisecond
	// placeStopTimeout bounds how long a stopping place agent waits for
	// its Worker to hand its keys back and leave gossip.
	placeStopTimeout = 5 * time.Second
)

// runPlace is `jagent place`: a worker.Worker of a group whose handler
// records the ownership of each key.
func runPlace(ctx context.Context, args []string, stderr io.Writer) int {
	var (
		hf                           holderFlags
		gossip, join, group, statusA string
		capacity                     int
		prepare                      time.Duration
	)
	fs := newFlagSet("place", "-servers URLS -gossip-addr IP:PORT -group G -id ID -history FILE [-join IP:PORT,...] [-ttl D] [-status-addr IP:PORT] [-duration D]", stderr)
	hf.register(fs)
	fs.StringVar(&gossip, "gossip-addr", "", "gossip address to bind and announce, IP:PORT; the servers must reach it (required)")
	fs.StringVar(&join, "join", "", "comma-separated gossip addresses of servers to join (default: ask the cluster)")
	fs.StringVar(&group, "group", "", "group whose keys to own (required)")
	fs.IntVar(&capacity, "capacity", 0, "most keys this worker takes (0: no bound)")
	fs.StringVar(&statusA, "status-addr", "", "serve GET /keys on this IP:PORT: the keys whose handler runs")
	fs.DurationVar(&prepare, "prepare", 0, "prepare each key that moves here for this long first, and record it (a warm hand-off; 0: none)")
	check := func() error {
		if _, _, err := net.SplitHostPort(gossip); err != nil {
			return fmt.Errorf("-gossip-addr: want IP:PORT, got %q: %w", gossip, err)
		}
		for _, a := range splitList(join) {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return fmt.Errorf("-join: %w", err)
			}
		}
		if group == "" {
			return errors.New("-group is required")
		}
		if capacity < 0 {
			return fmt.Errorf("-capacity must not be negative, got %d", capacity)
		}
		if prepare < 0 || prepare > time.Minute {
			return fmt.Errorf("-prepare must be from 0 to 1m, got %v", prepare)
		}
		if statusA != "" {
			if _, _, err := net.SplitHostPort(statusA); err != nil {
				return fmt.Errorf("-status-addr: %w", err)
			}
		}
		return nil
	}
	return runHolder(ctx, fs, args, stderr, &hf, check, func(ctx context.Context, log hclog.Logger, rec *recorder, c *client.Client) int {
		var w *worker.Worker
		h := &placeHandler{proc: hf.id, rec: rec, log: log, stop: ctx, holder: func() string { return w.Holder() },
			report: func(key string, load float64) { w.ReportLoad(key, load) }}
		opts := []worker.WorkerOption{worker.WithWorkerID(hf.id), worker.WithWorkerTTL(hf.ttl), worker.WithGossipAddr(gossip),
			worker.WithCapacity(capacity), worker.WithWorkerLogger(log)}
		if peers := splitList(join); len(peers) > 0 {
			opts = append(opts, worker.WithJoin(peers...))
		}
		if prepare > 0 {
			// The balancer waits for the report up to 5 times the
			// prepare, then moves the key anyway.
			opts = append(opts, worker.WithPrepare(5*prepare, h.prepare(prepare)))
		}
		w = worker.New(c, group, h.handle, opts...)
		if statusA != "" {
			stopStatus, err := serveStatus(statusA, hf.id, w, log)
			if err != nil {
				log.Error("cannot start", "error", err)
				return exitError
			}
			defer stopStatus()
		}
		log.Info("starting", "id", hf.id, "holder", w.Holder(), "group", group, "ttl", hf.ttl, "gossip", gossip, "seed", hf.seed, "servers", hf.urls)
		ran := make(chan error, 1)
		go func() { ran <- w.Run(ctx) }()
		select {
		case err := <-ran:
			if ctx.Err() == nil {
				log.Error("the worker stopped", "error", err)
				return exitError
			}
		case <-ctx.Done():
			select {
			case <-ran:
			case <-time.After(placeStopTimeout):
				log.Warn("the worker did not stop in time; exiting anyway", "timeout", placeStopTimeout)
			}
		}
		return exitOK
	})
}

// placeHandler records the ownership of the keys of a Worker. The handler
// sees the key's token and a context, not the lease: its Belief events
// carry no Deadline, and say that the context had not ended.
type placeHandler struct {
	proc   string
	rec    *recorder
	log    hclog.Logger
	stop   context.Context // the agent is stopping: stop acting at once
	holder func() string
	// report reports the load of a key the handler owns (the group is
	// placed by load): see placeLoad.
	report func(key string, load float64)
}

// placeLoad is the load a place agent reports for key: part-0 weighs as
// much as three of the others, so that placing by load and placing by
// count differ.
func placeLoad(key string) float64 {
	if key == "part-0" {
		return 3
	}
	return 1
}

// prepare returns the prepare function of a warm hand-off: it takes d
// (or ends with its context) and records Prepared.
func (h *placeHandler) prepare(d time.Duration) func(ctx context.Context, key string) error {
	return func(ctx context.Context, key string) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
		_ = h.rec.Write(history.Event{T: history.Now(), Kind: history.Prepared, Proc: h.proc, Key: key})
		h.log.Info("prepared", "key", key)
		return nil
	}
}

// handle records Acquired, then a Belief every placeBeliefInterval (the
// clock read before the context is checked) until the key's context ends
// or the agent stops, then Lost when the lease was lost, Released
// otherwise (T read before the Worker sends the release, which it does
// once handle has returned and the key has moved).
func (h *placeHandler) handle(ctx context.Context, key string, token uint64) {
	holder := h.holder()
	t := history.Now()
	if ctx.Err() != nil { // already lost: nothing was held for this handler to record
		return
	}
	_ = h.rec.Write(history.Event{T: t, Kind: history.Acquired, Proc: h.proc, Key: key, Holder: holder, Token: token})
	h.log.Info("owning", "key", key, "token", token)
	tick := time.NewTicker(placeBeliefInterval)
	defer tick.Stop()
	for {
		t := history.Now()
		if ctx.Err() != nil || h.stop.Err() != nil {
			cause := context.Cause(ctx)
			if ctx.Err() != nil && (errors.Is(cause, client.ErrLeaseLost) || errors.Is(cause, client.ErrLeaseExpiredLocally)) {
				_ = h.rec.Write(history.Event{Kind: history.Lost, Proc: h.proc, Key: key, Holder: holder, Token: token, Err: cause.Error()})
				h.log.Warn("lease lost", "key", key, "token", token, "error", cause)
				return
			}
			_ = h.rec.Write(history.Event{T: t, Kind: history.Released, Proc: h.proc, Key: key, Holder: holder, Token: token})
			h.log.Info("handing back", "key", key, "token", token)
			return
		}
		_ = h.rec.Write(history.Event{T: t, Kind: history.Belief, Proc: h.proc, Key: key, Holder: holder, Token: token})
		h.report(key, placeLoad(key))
		select {
		case <-tick.C:
		case <-ctx.Done():
		case <-h.stop.Done():
		}
	}
}

// serveStatus serves GET /keys on addr: {"id":ID,"keys":[...]}, the keys
// whose handler runs (Worker.Keys). It returns a function that stops it.
func serveStatus(addr, id string, w *worker.Worker, log hclog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-status-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /keys", func(rw http.ResponseWriter, _ *http.Request) {
		keys := w.Keys()
		if keys == nil {
			keys = []string{}
		}
		writeJSON(rw, http.StatusOK, map[string]any{"id": id, "keys": keys})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		ErrorLog: log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("status server failed", "error", err)
		}
	}()
	log.Info("serving status", "address", ln.Addr().String())
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}
