package sidebyside

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/tenure-io/tenure/test/bench"
)

// Binaries are what the arms run.
type Binaries struct {
	Tenure      string // bin/tenure
	EtcdCurrent string // bin/etcd-current (make bench-etcd)
	EtcdDebian  string // Debian's etcd-server, "" to leave its arms out
	Agent       string // cmd/lockagent
}

// Arms returns the arms of the comparison, in order: (a) etcd's Mutex,
// store unfenced; (b) etcd's Mutex, fenced by its lock key's create
// revision, recorded before the read and checked with the write; (c)
// tenure's lease, unfenced; (d) tenure's lease fenced by its token, the
// same way as (b). With writeOnly, (b-write) and (d-write): fenced at the
// write alone. With Debian's etcd, (a) and (b) against it too.
func Arms(b Binaries, writeOnly bool) ([]Arm, error) {
	cur, err := bench.EtcdVersion(b.EtcdCurrent)
	if err != nil {
		return nil, err
	}
	const revision, token = "fenced by the lock key's create revision", "fenced by its token"
	arms := []Arm{
		{Name: "a", Label: "etcd " + cur + " Mutex, store unfenced", System: "etcd", Bin: b.EtcdCurrent},
		{Name: "b", Label: "etcd " + cur + " Mutex, " + revision + " (read and write)", System: "etcd", Bin: b.EtcdCurrent, Fence: "read-write"},
		{Name: "c", Label: "tenure lease, store unfenced", System: "tenure", Bin: b.Tenure},
		{Name: "d", Label: "tenure lease, " + token + " (read and write)", System: "tenure", Bin: b.Tenure, Fence: "read-write"},
	}
	if writeOnly {
		arms = append(arms,
			Arm{Name: "b-write", Label: "etcd " + cur + " Mutex, " + revision + " (write only)", System: "etcd", Bin: b.EtcdCurrent, Fence: "write"},
			Arm{Name: "d-write", Label: "tenure lease, " + token + " (write only)", System: "tenure", Bin: b.Tenure, Fence: "write"})
	}
	if b.EtcdDebian != "" {
		old, err := bench.EtcdVersion(b.EtcdDebian)
		if err != nil {
			return nil, err
		}
		arms = append(arms,
			Arm{Name: "a-" + old, Label: "etcd " + old + " Mutex, store unfenced", System: "etcd", Bin: b.EtcdDebian},
			Arm{Name: "b-" + old, Label: "etcd " + old + " Mutex, " + revision + " (read and write)", System: "etcd", Bin: b.EtcdDebian, Fence: "read-write"})
	}
	return arms, nil
}

// Build builds tenure (from the repository at root), the current etcd
// and the agent into dir, each unless it is given already.
func Build(root, dir string, b Binaries) (Binaries, error) {
	build := func(into *string, name, pkgDir, pkg string) error {
		if *into != "" {
			return nil
		}
		*into = filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", *into, pkg)
		cmd.Dir = pkgDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
		return nil
	}
	bench := filepath.Join(root, "test", "bench")
	if err := build(&b.Tenure, "tenure", root, "./cmd/tenure"); err != nil {
		return b, err
	}
	if err := build(&b.EtcdCurrent, "etcd-current", bench, "./cmd/etcd"); err != nil {
		return b, err
	}
	if err := build(&b.Agent, "lockagent", bench, "./cmd/lockagent"); err != nil {
		return b, err
	}
	return b, nil
}
