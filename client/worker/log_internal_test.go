package worker

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
)

// Without a logger option the worker logs through the client's logger, or,
// when the application gave none, at Info (to stderr): never silently.
func TestWorkerDefaultLoggerIsNotSilent(t *testing.T) {
	if w := New(offlineClient(t, nil), "g", func(context.Context, string, uint64) {}); !w.log.IsInfo() {
		t.Error("a worker without a logger does not log at Info")
	}
	var out strings.Builder
	c2 := offlineClient(t, hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &out}))
	New(c2, "g", func(context.Context, string, uint64) {}).log.Info("probe")
	if !strings.Contains(out.String(), "probe") {
		t.Errorf("the worker did not log through the client's Config.Logger: %q", out.String())
	}
}

// offlineClient is a client of an address nothing listens on, logging to
// logger (nil: the client's default).
func offlineClient(t *testing.T, logger hclog.Logger) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{"127.0.0.1:1"}
	if logger != nil {
		cfg.Logger = logger
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
