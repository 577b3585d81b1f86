package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLoneServerSaysWhatItWaitsFor: a server started on an empty data dir
// with none of -bootstrap-expect, -initial-cluster and -join can elect no
// leader; instead of waiting silently it says, within seconds, what it
// waits for and which flags start a cluster.
func TestLoneServerSaysWhatItWaitsFor(t *testing.T) {
	c := newCluster(t)
	nodes, err := c.plan(1)
	if err != nil {
		t.Fatal(err)
	}
	nd := nodes[0]
	nd.args = nd.baseArgs()
	nd.logPath = filepath.Join(c.dir, "lone.log")
	if err := nd.start(); err != nil {
		t.Fatal(err)
	}
	p := nd.running()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	poll.WaitFor(t, 30*time.Second, func() error {
		log := tail(nd.logPath, 20)
		if !strings.Contains(log, "no leader yet") || !strings.Contains(log, "-bootstrap-expect N") || !strings.Contains(log, "-dev") {
			return fmt.Errorf("the lone server has not said what it waits for; its log:\n%s", log)
		}
		return nil
	})
}
