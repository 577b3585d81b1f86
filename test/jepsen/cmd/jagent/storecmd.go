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
)

// storeShutdownTimeout bounds how long a stopping store waits for the
// requests it is serving.
const storeShutdownTimeout = time.Second

// runStore is `jagent store`: the fenced register, until SIGTERM.
func runStore(ctx context.Context, args []string, stderr io.Writer) int {
	var listen, historyPath, logLevel string
	fs := newFlagSet("store", "-listen IP:PORT -history FILE", stderr)
	fs.StringVar(&listen, "listen", "", "address to serve the register on, IP:PORT (required)")
	fs.StringVar(&historyPath, "history", "", "history file to append store events to (required)")
	fs.StringVar(&logLevel, "log-level", "info", "level of the log on stderr: trace, debug, info, warn or error")
	code, ok := parseFlags(fs, args, stderr, func() error {
		if listen == "" {
			return errors.New("-listen is required")
		}
		if _, _, err := net.SplitHostPort(listen); err != nil {
			return fmt.Errorf("-listen: %w", err)
		}
		if historyPath == "" {
			return errors.New("-history is required")
		}
		if hclog.LevelFromString(logLevel) == hclog.NoLevel {
			return fmt.Errorf("-log-level: unknown level %q", logLevel)
		}
		return nil
	})
	if !ok {
		return code
	}
	log := newLogger(stderr, "jagent.store", logLevel)
	fence := storeFencing(log)
	rec, err := openRecorder(historyPath, log)
	if err != nil {
		log.Error("cannot start", "error", err)
		return exitError
	}
	defer rec.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		log.Error("cannot listen", "address", listen, "error", err)
		return exitError
	}
	if err := serveStore(ctx, ln, newStore(fence, rec, log), log); err != nil {
		log.Error("serving failed", "error", err)
		return exitError
	}
	return stopHolder(log, rec)
}

// serveStore serves s on ln until ctx ends, then lets the requests in
// flight finish (for up to a second) and returns. It returns an error only
// when serving failed before ctx ended.
func serveStore(ctx context.Context, ln net.Listener, s *store, log hclog.Logger) error {
	srv := &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("serving the register", "address", ln.Addr().String(), "fencing", s.fence)
	select {
	case err := <-served:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), storeShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("requests still in flight at shutdown were cut", "error", err)
		srv.Close()
	}
	<-served
	return nil
}
