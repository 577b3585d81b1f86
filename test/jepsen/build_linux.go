package jepsen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Build tags of the binaries the suite runs. The server always carries the
// injectable lessor clock; the negative controls add a deliberate bug each.
const (
	tagClockDrift   = "tenure_clockdrift"
	tagUnsafeRenew  = "tenure_unsafe_renew"
	tagUnsafeKeep   = "tenure_unsafe_keep"
	tagUnsafeRounds = "tenure_unsafe_rounds"
	// tagUnsafeHandover: a stopping leader hands its leases over with no
	// time left.
	tagUnsafeHandover = "tenure_unsafe_handover"
	tagNoFence        = "jepsen_nofence"
	// tagUnsafeIdentity: servers trust gossip's word for who a server is
	// (no node id in certificates is checked; forwarding follows gossip).
	tagUnsafeIdentity = "tenure_unsafe_identity"
	// tagUnsafePlainRaft: servers start with ACLs on an unauthenticated
	// Raft port.
	tagUnsafePlainRaft = "tenure_unsafe_plainraft"
	// tagUnsafeRestore: a restore takes the backup's leases and tokens as
	// they are.
	tagUnsafeRestore = "tenure_unsafe_restore"
)

// builder compiles the server and the agent once per set of tags.
type builder struct {
	root string // module root
	dir  string // output directory
	mu   sync.Mutex
	done map[string]string
}

func newBuilder(dir string) (*builder, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return nil, fmt.Errorf("not inside the tenure module")
	}
	return &builder{root: filepath.Dir(mod), dir: dir, done: map[string]string{}}, nil
}

// build returns the path of pkg ("./cmd/tenure", "./test/jepsen/cmd/jagent")
// built with tags, building it the first time it is asked for.
func (b *builder) build(pkg string, tags ...string) (string, error) {
	key := pkg + " " + strings.Join(tags, ",")
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.done[key]; ok {
		return p, nil
	}
	name := filepath.Base(pkg)
	if len(tags) > 0 {
		name += "-" + strings.Join(tags, "-")
	}
	out := filepath.Join(b.dir, name)
	cmd := exec.Command("go", "build", "-tags", strings.Join(tags, ","), "-o", out, pkg)
	cmd.Dir = b.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s -tags %s: %w\n%s", pkg, strings.Join(tags, ","), err, msg)
	}
	b.done[key] = out
	return out, nil
}
