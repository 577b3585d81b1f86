package cluster_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/damage"
	bolt "go.etcd.io/bbolt"
)

// A server whose raft.db has had its term and vote lowered (a byte edit of
// the stable store) refuses to start, naming the file and the remedy: a
// server that forgets its vote may vote twice in one term. Lowering only
// the vote's term, which no comparison with the log can see, is found too.
func TestServerRefusesLoweredTermAndVote(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []string
	}{
		{"term and vote", []string{"CurrentTerm", "LastVoteTerm"}},
		{"the vote's term only", []string{"LastVoteTerm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, n, dir := startSolo(t)
			if _, _, err := n.Acquire(harness.Context(t, 5*time.Second), cluster.AcquireRequest{Secret: testSecret, Key: "k", Holder: "h", TTL: time.Minute}); err != nil {
				t.Fatalf("acquire: %v", err)
			}
			c.Stop(0)
			was, _, err := damage.LowerTerm(dir, tc.keys...)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("lowered %v from %v by one", tc.keys, was)

			node, err := cluster.New(soloConfig(dir))
			if err == nil {
				st := node.Status()
				node.Shutdown()
				t.Fatalf("a server started on a raft.db whose %v were lowered from %v, and ran at term %d", tc.keys, was, st.Term)
			}
			if !errors.Is(err, cluster.ErrRefusedStart) {
				t.Errorf("error %v: want an ErrRefusedStart (exit 78)", err)
			}
			for _, want := range []string{filepath.Join(dir, "raft.db"), "remove-server -force n1", "readmit-server n1"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// A data dir written by a build before the seal on term and vote (each
// value bare) starts, at the term it had.
func TestServerStartsOnUnsealedTermAndVote(t *testing.T) {
	c, n, dir := startSolo(t)
	term := n.Status().Term
	c.Stop(0)
	// As the build before wrote them: the number's 8 bytes, the vote's
	// candidate, nothing after.
	db, err := bolt.Open(filepath.Join(dir, "raft.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		conf := tx.Bucket([]byte("conf"))
		for k, size := range map[string]int{"CurrentTerm": 8, "LastVoteTerm": 8, "LastVoteCand": -1} {
			v := conf.Get([]byte(k))
			if v == nil {
				continue
			}
			if size < 0 {
				size = len(v) - 8 // the seal: checksum and magic
			}
			if err := conf.Put([]byte(k), bytes.Clone(v[:size])); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	node, err := cluster.New(soloConfig(dir))
	if err != nil {
		t.Fatalf("a data dir of the build before the seal: %v", err)
	}
	defer node.Shutdown()
	harness.WaitUntil(t, 5*time.Second, "the server to lead again", func() bool { return node.Ready() == nil })
	if got := node.Status().Term; got <= term {
		t.Errorf("term after restart %d, want past %d", got, term)
	}
}
