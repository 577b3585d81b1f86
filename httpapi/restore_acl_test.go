package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/fsm"
)

// TestRestoreByAnOperatorKeepsTheACLState: an operator token (no acl
// right) restores a backup of its own cluster, and a token created since
// the backup still works after it; a crafted snapshot that bootstraps a
// management token of the attacker's choice gives the attacker nothing,
// and every token of the cluster still works.
func TestRestoreByAnOperatorKeepsTheACLState(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "ops", rule("", client.RightOperator))
	op := e.token(t, client.ACLTokenSpec{Policies: []string{"ops"}}).SecretID
	backup := doAs(t, op, "GET", url+"/v1/snapshot", "")
	backup.wantStatus(t, "backup by the operator", http.StatusOK)
	later := e.token(t, client.ACLTokenSpec{Description: "made after the backup", Policies: []string{"ops"}}).SecretID

	doAs(t, op, "PUT", url+"/v1/snapshot", string(backup.body)).wantStatus(t, "restore by the operator", http.StatusOK)
	doAs(t, later, "GET", url+"/v1/acl/token/self", "").wantStatus(t, "a token made after the backup, after the operator's restore", http.StatusOK)

	const evil = "evil-secret"
	m := fsm.New()
	m.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: fsm.Encode(fsm.ACLBootstrap{Token: fsm.ACLToken{
		AccessorID: "e0000000-0000-4000-8000-000000000000", SecretHash: hashSecret(evil), Management: true}})})
	crafted := m.Backup()
	r := doAs(t, op, "PUT", url+"/v1/snapshot", string(crafted))
	t.Logf("restore of a crafted snapshot by the operator: %d %s", r.status, r.body)
	if got := doAs(t, evil, "GET", url+"/v1/acl/tokens", ""); got.status == http.StatusOK {
		t.Fatalf("the crafted snapshot's token lists every token after an operator restored it: %s", got.body)
	}
	for name, secret := range map[string]string{"bootstrap": e.boot, "operator": op, "later": later} {
		doAs(t, secret, "GET", url+"/v1/acl/token/self", "").wantStatus(t, "the "+name+" token after the crafted restore", http.StatusOK)
	}
}

// TestUnverifiedRestoreNeedsACL: a backup this cluster did not sign is
// refused, naming the way to restore it all the same; asking for that
// needs the acl right; with it, the backup is restored, ACL state too.
func TestUnverifiedRestoreNeedsACL(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "ops", rule("", client.RightOperator))
	op := e.token(t, client.ACLTokenSpec{Policies: []string{"ops"}}).SecretID
	m := fsm.New()
	m.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: fsm.Encode(fsm.Acquire{Key: "other/k", Holder: "h", TTL: time.Minute})})
	m.Apply(&raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: fsm.Encode(fsm.ACLBootstrap{Token: fsm.ACLToken{
		AccessorID: "e0000000-0000-4000-8000-000000000000", SecretHash: hashSecret("other-secret"), Management: true}})})
	foreign := string(m.Backup())

	for _, secret := range []string{op, e.boot} {
		r := doAs(t, secret, "PUT", url+"/v1/snapshot", foreign)
		r.wantStatus(t, "restore of an unsigned backup without unverified=true", http.StatusBadRequest)
		if a := r.apiErr(t); a.Error != wire.CodeBackupUnverified || a.Field != "snapshot" || !strings.Contains(a.Message, "unverified") {
			t.Errorf("refusal %+v: want backup_unverified on field snapshot, naming unverified", a)
		}
	}
	doAs(t, op, "PUT", url+"/v1/snapshot?unverified=true", foreign).wantDenied(t, "unverified=true by an operator", wire.CodePermissionDenied, `"acl"`)
	doAs(t, op, "PUT", url+"/v1/snapshot?unverified=maybe", foreign).wantStatus(t, "unverified=maybe", http.StatusBadRequest)

	r := doAs(t, e.boot, "PUT", url+"/v1/snapshot?unverified=true", foreign)
	r.wantStatus(t, "unverified=true by the management token", http.StatusOK)
	var res client.RestoreResult
	r.decode(t, &res)
	if res.Verified || !res.ACLRestored || res.Snapshot.Signed {
		t.Errorf("restore result %+v: want unverified, unsigned, ACL state restored", res)
	}
	doAs(t, "other-secret", "GET", url+"/v1/acl/token/self", "").wantStatus(t, "the restored backup's token", http.StatusOK)
}

// TestOperatorStillScrapesAndDebugs: policies written before the metrics
// and debug rights keep working (operator implies both); a metrics token
// scrapes and does nothing else; a debug token reads the debug routes and
// metrics, not backups.
func TestOperatorStillScrapesAndDebugs(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "ops", rule("", client.RightOperator))
	e.policy(t, "scrape", rule("", client.RightMetrics))
	e.policy(t, "dbg", rule("", client.RightDebug))
	op := e.token(t, client.ACLTokenSpec{Policies: []string{"ops"}}).SecretID
	scrape := e.token(t, client.ACLTokenSpec{Policies: []string{"scrape"}}).SecretID
	dbg := e.token(t, client.ACLTokenSpec{Policies: []string{"dbg"}}).SecretID
	for _, c := range []struct {
		who, secret, path string
		want              int
	}{
		{"operator", op, "/metrics", http.StatusOK},
		{"operator", op, "/v1/debug/logs", http.StatusOK},
		{"metrics", scrape, "/metrics", http.StatusOK},
		{"metrics", scrape, "/v1/debug/logs", http.StatusForbidden},
		{"metrics", scrape, "/v1/snapshot", http.StatusForbidden},
		{"debug", dbg, "/metrics", http.StatusOK},
		{"debug", dbg, "/v1/debug/logs", http.StatusOK},
		{"debug", dbg, "/v1/debug/pprof/goroutine", http.StatusOK},
		{"debug", dbg, "/v1/snapshot", http.StatusForbidden},
	} {
		doAs(t, c.secret, "GET", url+c.path, "").wantStatus(t, "GET "+c.path+" with a "+c.who+" token", c.want)
	}
}

// hashSecret is the hex SHA-256 of a token's secret, as the cluster
// stores it.
func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
