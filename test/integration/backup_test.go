package integration

import (
	"context"
	be "encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

// TestSnapshotSaveInspectRestoreWithTLSAndACLs: on a cluster of real
// servers with mutual TLS and ACLs on, `tenure snapshot save` writes a
// backup that `inspect` reads, and `restore` puts it back through Raft:
// every server holds the backup's leases, a lease held at the restore
// keeps its holder, and the next token is above every token handed out
// before and since. A token without the operator right can do neither.
func TestSnapshotSaveInspectRestoreWithTLSAndACLs(t *testing.T) {
	c, p, tc := newMutualTLSCluster(t, "ops")
	tlsArgs := p.serverArgs("-acl-enabled")
	c.nodeArgs = func(t *testing.T, nd *node) []string {
		return append(tlsArgs(t, nd), "-backup-dir", nd.dataDir+"-backups", "-backup-interval", "1s", "-backup-keep", "3")
	}
	c.start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	boot, withToken := bootstrapOps(t, c, tc)
	admin := withToken("ops", boot.SecretID)
	app := policyToken(t, ctx, admin, "app", "", []client.ACLRule{{Prefix: "", Rights: []string{client.RightRead, client.RightWrite}}})
	acquire := func(key, holder string) *client.Lease {
		t.Helper()
		l, err := withToken(holder, app.SecretID).Acquire(ctx, key, client.WithTTL(time.Minute))
		if err != nil {
			t.Fatalf("acquire %s: %v", key, err)
		}
		return l
	}
	env := tlsEnv(tc, "", c.httpAddrs()...)
	opsEnv := append(env, "TENURE_HTTP_TOKEN="+boot.SecretID)
	appEnv := append(env, "TENURE_HTTP_TOKEN="+app.SecretID)

	a := acquire("jobs/a", "w1")
	acquire("jobs/b", "w2")
	file := filepath.Join(t.TempDir(), "backup.snap")
	if r := runTenure(t, appEnv, "snapshot", "save", file); r.code == 0 || !strings.Contains(r.stderr, "permission_denied") {
		t.Fatalf("snapshot save with a token without the operator right: exit %d, stderr %q; want permission_denied", r.code, r.stderr)
	}
	out := mustRunTenure(t, opsEnv, "snapshot", "save", file)
	if !strings.Contains(out.stdout, "2 leases (2 held)") {
		t.Errorf("snapshot save printed %q, want 2 leases (2 held)", out.stdout)
	}
	var info client.SnapshotContents
	if err := json.Unmarshal([]byte(mustRunTenure(t, nil, "snapshot", "inspect", "-json", file).stdout), &info); err != nil {
		t.Fatalf("inspect -json: %v", err)
	}
	if info.Held != 2 || info.LastToken != a.Token()+1 || info.ClusterID == "" || !info.Signed {
		t.Errorf("inspect = %+v, want 2 held, last token %d, a cluster id, signed", info, a.Token()+1)
	}

	// After the backup: a changes hands, c is new, b is released.
	if err := a.Release(ctx); err != nil {
		t.Fatalf("release a: %v", err)
	}
	a2 := acquire("jobs/a", "w9")
	acquire("jobs/c", "w3")
	highest := a2.Token() + 1

	if r := runTenure(t, appEnv, "snapshot", "restore", "-confirm", c.clusterID(t), file); r.code == 0 || !strings.Contains(r.stderr, "permission_denied") {
		t.Fatalf("snapshot restore with a token without the operator right: exit %d, stderr %q; want permission_denied", r.code, r.stderr)
	}
	mustRunTenure(t, opsEnv, "snapshot", "restore", "-confirm", c.clusterID(t), file)
	for key, want := range map[string]string{"jobs/a": "w9", "jobs/b": "w2", "jobs/c": "w3"} {
		for i := range c.nodes {
			poll.WaitFor(t, 10*time.Second, func() error {
				r := c.callOnce(t, i, http.MethodGet, "/v1/leases/"+key+"?stale=true", nil)
				var l lease
				if r.Status != http.StatusOK || json.Unmarshal(r.Body, &l) != nil || !l.Held() || l.Holder != want {
					return fmt.Errorf("server %s, %s after the restore: %v; want held by %s", c.nodes[i].id, key, r, want)
				}
				return nil
			})
		}
	}
	next := acquire("jobs/d", "w4")
	if next.Token() <= highest {
		t.Fatalf("first token after the restore %d, want above %d (handed out since the backup)", next.Token(), highest)
	}

	// The leader also writes a backup every second to its -backup-dir
	// (the three newest kept), which snapshot list reads and checks.
	l := c.leader(t)
	dir := c.nodes[l].dataDir + "-backups"
	poll.WaitFor(t, 20*time.Second, func() error {
		r := runTenure(t, nil, "snapshot", "list", "-json", dir)
		var list []struct {
			File string                   `json:"file"`
			Info *client.SnapshotContents `json:"info"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil {
			return fmt.Errorf("snapshot list %s: exit %d, %s %s", dir, r.code, r.stdout, r.stderr)
		}
		if len(list) != 3 || list[2].Info == nil || list[2].Info.LastToken < next.Token() {
			return fmt.Errorf("snapshot list %s: %s; want the 3 newest backups, the last with token %d", dir, r.stdout, next.Token())
		}
		return nil
	})

	if err := os.WriteFile(file, []byte("not a backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runTenure(t, opsEnv, "snapshot", "restore", "-confirm", c.clusterID(t), file); r.code == 0 || !strings.Contains(r.stderr, "nothing restored") {
		t.Fatalf("restore of a file that is not a backup: exit %d, stderr %q; want a refusal saying nothing was restored", r.code, r.stderr)
	}
}

// TestSnapshotRestoreByAnOperatorKeepsACLsAndTokens: on real servers with
// mutual TLS and ACLs on, an operator token (no acl) restores a backup:
// a token made since the backup still works, and app/rk, held by alice in
// the backup and taken and released by bob since, comes back free with
// bob's token. An edited backup is refused, -unverified is refused to the
// operator, and a management token may restore it with -unverified.
func TestSnapshotRestoreByAnOperatorKeepsACLsAndTokens(t *testing.T) {
	c, tc := startSecureCluster(t, 3, "ops")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	boot, withToken := bootstrapOps(t, c, tc)
	admin := withToken("ops", boot.SecretID)
	for name, rights := range map[string][]string{"app": {client.RightRead, client.RightWrite}, "ops": {client.RightOperator}} {
		if _, err := admin.ACL().SetPolicy(ctx, name, client.ACLPolicySpec{Rules: []client.ACLRule{{Prefix: "", Rights: rights}}}); err != nil {
			t.Fatal(err)
		}
	}
	token := func(policy string) string {
		tok, err := admin.ACL().CreateToken(ctx, client.ACLTokenSpec{Policies: []string{policy}})
		if err != nil {
			t.Fatal(err)
		}
		return tok.SecretID
	}
	app, op := token("app"), token("ops")
	env := tlsEnv(tc, "", c.httpAddrs()...)
	opEnv := append(env, "TENURE_HTTP_TOKEN="+op)
	adminEnv := append(env, "TENURE_HTTP_TOKEN="+boot.SecretID)

	alice, err := withToken("alice", app).Acquire(ctx, "app/rk", client.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "backup.snap")
	mustRunTenure(t, opEnv, "snapshot", "save", file)
	if err := alice.Release(ctx); err != nil {
		t.Fatal(err)
	}
	bob, err := withToken("bob", app).Acquire(ctx, "app/rk", client.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := bob.Release(ctx); err != nil {
		t.Fatal(err)
	}
	later := token("app")

	out := mustRunTenure(t, opEnv, "snapshot", "restore", "-confirm", c.clusterID(t), file)
	if !strings.Contains(out.stdout, "the cluster's own kept") {
		t.Errorf("restore by the operator printed %q, want it to say the ACL state was kept", out.stdout)
	}
	if _, err := withToken("x", later).ACL().Self(ctx); err != nil {
		t.Fatalf("a token made after the backup, after the operator's restore: %v", err)
	}
	got, _, err := admin.Leases().Get(ctx, "app/rk", nil)
	if err != nil || got.State == client.StateHeld || got.Token != bob.Token() {
		t.Fatalf("app/rk after the restore: %+v, %v; want free with bob's token %d (alice had %d)", got, err, bob.Token(), alice.Token())
	}

	// An edited backup (its CRC made good again) is refused.
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "alice")
	if i < 0 {
		t.Fatal("the backup does not name alice")
	}
	b[i] = 'm'     // "mlice"
	body := b[38:] // after magic, version and MAC: the snapshot
	be.BigEndian.PutUint32(body[len(body)-4:], crc32.Checksum(body[:len(body)-4], crc32.MakeTable(crc32.Castagnoli)))
	edited := filepath.Join(t.TempDir(), "edited.snap")
	if err := os.WriteFile(edited, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runTenure(t, opEnv, "snapshot", "restore", "-confirm", c.clusterID(t), edited); r.code == 0 || !strings.Contains(r.stderr, "not signed by this cluster") {
		t.Fatalf("restore of an edited backup: exit %d, stderr %q; want a refusal naming the signature", r.code, r.stderr)
	}
	if r := runTenure(t, opEnv, "snapshot", "restore", "-confirm", c.clusterID(t), "-unverified", edited); r.code == 0 || !strings.Contains(r.stderr, "permission_denied") {
		t.Fatalf("-unverified by the operator: exit %d, stderr %q; want permission_denied", r.code, r.stderr)
	}
	if r := mustRunTenure(t, adminEnv, "snapshot", "restore", "-confirm", c.clusterID(t), "-unverified", edited); !strings.Contains(r.stderr, "not signed by this cluster") {
		t.Errorf("-unverified by the management token: stderr %q, want the warning", r.stderr)
	}
}

// TestLargeBackupRestoresWithoutAnElection: three server processes with
// the default Raft timings hold 10,302 leases, 2,300 of them with the
// largest metadata a lease may carry; `tenure snapshot save` writes a
// backup of about 39 MB, and `tenure snapshot restore` puts it back
// without an election.
func TestLargeBackupRestoresWithoutAnElection(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and restores 39 MB")
	}
	c := newCluster(t)
	c.start(t, 3, "-heartbeat-timeout", "100ms", "-election-timeout", "100ms", "-leader-lease-timeout", "100ms")
	c.leader(t)
	cfg := client.DefaultConfig()
	cfg.Addresses, cfg.Timeout = c.httpAddrs(), 30*time.Second
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	meta := map[string]string{}
	for i := range 16 {
		meta[fmt.Sprintf("k%02d%s", i, strings.Repeat("k", 61))] = strings.Repeat(string(rune('a'+i)), 1024)
	}
	const leases, full, workers = 10302, 2300, 8
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := w; i < leases; i += workers {
				req := client.AcquireRequest{Holder: fmt.Sprintf("worker-%d", i%50), TTL: 30 * time.Minute}
				if i < full {
					req.Metadata = meta
				}
				if _, _, err := cl.Leases().Acquire(ctx, fmt.Sprintf("big/%05d", i), req); err != nil {
					errs <- fmt.Errorf("acquire big/%05d: %w", i, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"TENURE_HTTP_ADDR=" + strings.Join(c.httpAddrs(), ",")}
	file := filepath.Join(t.TempDir(), "backup.snap")
	mustRunTenure(t, env, "snapshot", "save", file)
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	l := c.leader(t)
	term := c.mustStatus(t, l).Term
	start := time.Now()
	out := mustRunTenure(t, env, "snapshot", "restore", "-confirm", c.clusterID(t), file)
	t.Logf("restored %d bytes in %v: %s", fi.Size(), time.Since(start).Round(time.Millisecond), out.stdout)
	if !strings.Contains(out.stdout, "10302 leases") {
		t.Errorf("restore printed %q, want 10302 leases", out.stdout)
	}
	for i := range c.nodes {
		if st := c.mustStatus(t, i); st.Term != term {
			t.Errorf("server %s in term %d after the restore, want %d: the restore cost an election", c.nodes[i].id, st.Term, term)
		}
	}
}

// bootstrapOps bootstraps the ACLs of the secure cluster c as holder
// "ops" and returns the management token, and a function that makes a
// client of c for a holder and a token (10s a request).
func bootstrapOps(t *testing.T, c *cluster, tc client.TLSConfig) (*client.ACLToken, func(holder, token string) *client.Client) {
	t.Helper()
	boot, _ := c.bootstrapTLS(t, "ops", tc)
	return boot, func(holder, token string) *client.Client {
		return tokenClient(t, holder, token, tc, 10*time.Second, c.httpAddrs()...)
	}
}
