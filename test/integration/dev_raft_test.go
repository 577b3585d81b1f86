package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/forgeraft"
)

// A -dev server with ACLs on opens no Raft port: its Raft runs in memory,
// so the two unauthenticated TCP requests that made a management token on
// a plain Raft port (a probe, then a forged AppendEntries carrying the
// token) find nothing to talk to, and the server listens on the HTTP and
// gossip addresses only.
func TestDevServerHasNoRaftPort(t *testing.T) {
	d := startDev(t, "-acl-enabled")
	cfg := client.DefaultConfig()
	cfg.Addresses, cfg.Holder = []string{d.httpAddr}, "dev-test"
	anon, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	boot := bootstrapACL(t, anon, startTimeout)

	const secret = "forged-secret-0123456789"
	sum := sha256.Sum256([]byte(secret))
	forged := fsm.Encode(fsm.ACLTokenSet{Token: fsm.ACLToken{AccessorID: "forged", SecretHash: hex.EncodeToString(sum[:]), Management: true}})
	res, err := forgeraft.Append(d.raftAddr, forged, 5*time.Second)
	if err == nil {
		cfg.Token = secret
		mallory, err := client.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var made *client.ACLToken
		t.Logf("%d unauthenticated TCP requests to the dev server's Raft port (%s) were accepted (forged term %d, index %d)", res.Requests, d.raftAddr, res.Term, res.Index)
		harness.WaitFor(t, 10*time.Second, func() error {
			made, err = mallory.ACL().CreateToken(context.Background(), client.ACLTokenSpec{Description: "mallory's", Management: true})
			return err
		})
		t.Fatalf("%d unauthenticated TCP requests to the dev server's Raft port (%s) made a management token, which then made token %s", res.Requests, d.raftAddr, made.AccessorID)
	}
	t.Logf("forged append to %s: %v", d.raftAddr, err)

	ports, err := listeningPorts(d.cmd.Process.Pid)
	if err != nil {
		t.Skipf("cannot list the server's sockets: %v", err)
	}
	var want []int
	for _, a := range []string{d.httpAddr, d.gossipAddr} {
		p, _ := strconv.Atoi(a[strings.LastIndex(a, ":")+1:])
		want = append(want, p)
	}
	slices.Sort(want)
	if !slices.Equal(ports, want) {
		t.Errorf("the dev server listens on TCP ports %v, want only HTTP and gossip %v", ports, want)
	}

	cfg.Token = boot.SecretID
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.use(t, c)
	d.stop(t)
}

// listeningPorts returns the local TCP ports (IPv4 and IPv6) on which the
// process pid has a listening socket, sorted, from /proc.
func listeningPorts(pid int) ([]int, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// local_address rem_address st ... inode (field 9); 0A is LISTEN
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			p, err := strconv.ParseUint(f[1][strings.LastIndex(f[1], ":")+1:], 16, 16)
			if err != nil {
				return nil, err
			}
			ports = append(ports, int(p))
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports), nil
}

// The binary refuses ACLs on a plain Raft port with a usage error that
// names the flags to add.
func TestServerRefusesACLsOnPlainRaft(t *testing.T) {
	r := runTenure(t, nil, "server", "-data-dir", t.TempDir(), "-acl-enabled")
	if r.code != 2 || !strings.Contains(r.stderr, "-tls-cert-file, -tls-key-file and -tls-ca-file") {
		t.Errorf("server -acl-enabled without TLS: exit %d, stderr %q; want 2 and the TLS flags to add", r.code, r.stderr)
	}
}
