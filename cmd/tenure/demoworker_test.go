package main

import (
	"strings"
	"testing"
)

// demo-worker -h says where the worker takes its gossip key from, and
// what happens without it: the error it logs names the same variable.
func TestDemoWorkerHelpNamesTheGossipKeyVariable(t *testing.T) {
	r := runCLI(t, "demo-worker", "-h")
	if r.code != exitOK || !strings.Contains(r.stderr, "TENURE_GOSSIP_KEY") || !strings.Contains(r.stderr, "-group") {
		t.Errorf("demo-worker -h: exit %d, stderr %q; want the usage naming TENURE_GOSSIP_KEY", r.code, r.stderr)
	}
}
