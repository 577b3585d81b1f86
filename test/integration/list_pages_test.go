package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

// TestListPagesOverTLSWithACL: a server with TLS and ACLs on holds more
// leases than one default page. The Go client and `tenure leases list`
// list all of them; a token that may read one prefix pages through that
// prefix only.
func TestListPagesOverTLSWithACL(t *testing.T) {
	c, tc := startSecureCluster(t, 1, "app")
	newClient := func(token string) *client.Client {
		return tokenClient(t, "lister", token, tc, 10*time.Second, c.httpAddrs()...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	boot := bootstrapACL(t, newClient(""), startTimeout)
	c.token = boot.SecretID
	c.leader(t)
	admin := newClient(boot.SecretID)

	const total = 1005 // the default page is 1000
	var wg sync.WaitGroup
	errs := make(chan error, total)
	sem := make(chan struct{}, 64)
	for i := range total {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, _, err := admin.Leases().Acquire(ctx, fmt.Sprintf("pg/%04d", i), client.AcquireRequest{Holder: "h", TTL: time.Hour})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
	}
	if _, _, err := admin.Leases().Acquire(ctx, "other/1", client.AcquireRequest{Holder: "h", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}

	leases, _, err := admin.Leases().List(ctx, &client.ListOptions{Prefix: "pg/"}, nil)
	if err != nil || len(leases) != total || leases[total-1].Key != "pg/1004" {
		t.Fatalf("Go client List: %d leases, %v; want %d, the last pg/1004", len(leases), err, total)
	}

	env := tlsEnv(tc, boot.SecretID, c.httpAddrs()...)
	out := mustRunTenure(t, env, "leases", "list", "-prefix", "pg/")
	if rows := strings.Count(strings.TrimSpace(out.stdout), "\n"); rows != total { // a header and one line per lease
		t.Errorf("tenure leases list printed %d rows, want %d", rows, total)
	}

	// A token that reads pg/00 only pages within it.
	tok := policyToken(t, ctx, admin, "pg00", "", []client.ACLRule{{Prefix: "pg/00", Rights: []string{client.RightRead}}})
	reader := newClient(tok.SecretID)
	var got []string
	page := client.PageOptions{Limit: 30}
	for {
		out, _, err := reader.Leases().ListPage(ctx, &client.ListOptions{Prefix: "pg/00"}, page, nil)
		if err != nil {
			t.Fatalf("ListPage as the pg/00 reader: %v", err)
		}
		for _, l := range out.Leases {
			got = append(got, l.Key)
		}
		if out.Next == "" {
			break
		}
		page.Cursor = out.Next
	}
	if len(got) != 100 || got[0] != "pg/0000" || got[99] != "pg/0099" {
		t.Errorf("the pg/00 reader listed %d keys (%v … ), want pg/0000 … pg/0099", len(got), got[:min(3, len(got))])
	}
	if _, _, err := reader.Leases().ListPage(ctx, &client.ListOptions{Prefix: "pg/"}, page, nil); err == nil {
		t.Errorf("the pg/00 reader listed pg/ with a cursor: want permission denied")
	}
}
