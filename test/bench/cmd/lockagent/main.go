// Command lockagent is one client of the side-by-side lock test
// (test/bench/sidebyside): it takes a lock, reads a counter from
// PostgreSQL, checks that it still holds the lock, says so on stdout (the
// moment the nemesis may pause it, as a GC pause would), and writes the
// counter plus one with a history row, in one transaction; then it lets
// the lock go, and again, until -duration has passed.
//
// The lock is etcd's concurrency.Mutex (-system etcd) or a tenure lease
// (-system tenure). -fence write runs the write behind sqlfence in its
// transaction, with the lock's token: etcd's lock key's create revision,
// or the tenure lease's token. -fence read-write also advances the fence
// before the read, so that a superseded holder cannot write between the
// new holder's read and its write. -fence none: the store takes any write.
//
// Every line on stdout is one JSON object: {"ev":"writing","op":N} before
// each write, then {"ev":"done",...} with the agent's counts. With -sync
// the agent waits for a line on stdin after each "writing": the nemesis
// answers once it has paused the agent, or at once, so that a pause lands
// between the lock check and the write.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/sqlfence"
	"github.com/tenure-io/tenure/test/bench/sidebyside"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// lock is one holding of the lock.
type lock struct {
	token  uint64
	valid  func() bool // the lock client still believes it holds the lock
	unlock func()
}

type locker interface {
	lock(ctx context.Context) (*lock, error)
	close()
}

func main() {
	system := flag.String("system", "", "etcd or tenure")
	endpoints := flag.String("endpoints", "", "the lock servers' client addresses, comma-separated (host:port)")
	dsn := flag.String("db", "", "PostgreSQL DSN of the store")
	fence := flag.String("fence", "none", "none, write (fence the write with the lock's token) or read-write (also advance the fence before the read)")
	id := flag.String("id", "", "this agent's name")
	key := flag.String("key", "sbs/lock", "the lock's key (tenure) or prefix (etcd)")
	ttl := flag.Duration("ttl", 2*time.Second, "the lock's TTL (etcd: whole seconds)")
	think := flag.Duration("think", 10*time.Millisecond, "time between the lock check and the write")
	duration := flag.Duration("duration", 20*time.Second, "how long to run")
	syncStdin := flag.Bool("sync", false, "after each {\"ev\":\"writing\"} line, wait for a line on stdin (the nemesis's word)")
	flag.Parse()
	if err := run(*system, strings.Split(*endpoints, ","), *dsn, *fence, *id, *key, *ttl, *think, *duration, *syncStdin); err != nil {
		fmt.Fprintf(os.Stderr, "lockagent %s: %v\n", *id, err)
		os.Exit(1)
	}
}

func run(system string, endpoints []string, dsn string, fence string, id, key string, ttl, think, duration time.Duration, syncStdin bool) error {
	out := json.NewEncoder(os.Stdout)
	var in *bufio.Reader
	if syncStdin {
		in = bufio.NewReader(os.Stdin)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if fence != "none" && fence != "write" && fence != "read-write" {
		return fmt.Errorf("-fence %q: want none, write or read-write", fence)
	}
	var l locker
	switch system {
	case "etcd":
		l, err = newEtcd(endpoints, key, ttl)
	case "tenure":
		l, err = newTenure(endpoints, id, key, ttl)
	default:
		err = fmt.Errorf("-system %q: want etcd or tenure", system)
	}
	if err != nil {
		return err
	}
	defer l.close()
	d, _ := sqlfence.Postgres("")
	f := sqlfence.New(d)

	var c sidebyside.AgentLine
	end := time.Now().Add(duration)
	for op := 1; time.Now().Before(end); op++ {
		ctx, cancel := context.WithDeadline(context.Background(), end)
		h, err := l.lock(ctx)
		cancel()
		if err != nil {
			if time.Now().Before(end) {
				c.Failed++
				c.LastErr = "lock: " + err.Error()
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		err = step(db, f, fence, h, id, op, think, out, in, &c)
		h.unlock()
		switch {
		case err == nil:
		case errors.Is(err, sqlfence.ErrStale):
			c.Refused++
		case errors.Is(err, errLost):
			c.Lost++
		default:
			c.Failed++
			c.LastErr = err.Error()
		}
	}
	c.Ev = "done"
	return out.Encode(c)
}

var errLost = errors.New("lock lost before the write")

// step reads the counter, checks the lock, announces the write, waits
// think, and writes the counter plus one with a history row.
func step(db *sql.DB, f *sqlfence.Fence, fence string, h *lock, id string, op int, think time.Duration, out *json.Encoder, in *bufio.Reader, c *sidebyside.AgentLine) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if fence == "read-write" {
		// Claim the counter before reading it: from now on no write of an
		// older holder lands.
		if err := f.Advance(ctx, db, "counter", h.token); err != nil {
			return err
		}
	}
	var v int64
	if err := db.QueryRowContext(ctx, `SELECT value FROM counter WHERE id = 1`).Scan(&v); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if !h.valid() {
		return errLost
	}
	if err := out.Encode(sidebyside.AgentLine{Ev: "writing", Op: op}); err != nil {
		return err
	}
	if in != nil {
		// Wait for the nemesis's word: it pauses this process (SIGSTOP)
		// before it answers, or answers at once.
		if _, err := in.ReadString('\n'); err != nil {
			return fmt.Errorf("stdin: %w", err)
		}
	}
	time.Sleep(think) // a pause here is the one fencing exists for
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if fence != "none" {
		if err := f.Advance(ctx, tx, "counter", h.token); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE counter SET value = $1 WHERE id = 1`, v+1); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO history (agent, op, token, read, wrote) VALUES ($1, $2, $3, $4, $5)`,
		id, op, int64(h.token), v, v+1); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	c.Ops++
	return nil
}

// etcdLocker is concurrency.Mutex on a session of the lock's TTL; a new
// session once the old one has ended (its lease expired while the agent
// was paused or cut off).
type etcdLocker struct {
	cli    *clientv3.Client
	prefix string
	ttl    int
	s      *concurrency.Session
}

func newEtcd(endpoints []string, prefix string, ttl time.Duration) (*etcdLocker, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	return &etcdLocker{cli: cli, prefix: prefix, ttl: max(int(ttl/time.Second), 1)}, nil
}

func (e *etcdLocker) lock(ctx context.Context) (*lock, error) {
	if e.s != nil {
		select {
		case <-e.s.Done():
			e.s.Close()
			e.s = nil
		default:
		}
	}
	if e.s == nil {
		s, err := concurrency.NewSession(e.cli, concurrency.WithTTL(e.ttl), concurrency.WithContext(context.Background()))
		if err != nil {
			return nil, err
		}
		e.s = s
	}
	s := e.s
	m := concurrency.NewMutex(s, e.prefix)
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	// The fence: the create revision of this holding's lock key, the
	// order in which etcd's lock serves its waiters.
	resp, err := e.cli.Get(ctx, m.Key())
	if err != nil || len(resp.Kvs) == 0 {
		uctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m.Unlock(uctx)
		cancel()
		if err == nil {
			err = errors.New("no such key")
		}
		return nil, fmt.Errorf("read the lock key %s: %w", m.Key(), err)
	}
	return &lock{
		token: uint64(resp.Kvs[0].CreateRevision),
		valid: func() bool {
			select {
			case <-s.Done():
				return false
			default:
				return true
			}
		},
		unlock: func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			m.Unlock(ctx)
		},
	}, nil
}

func (e *etcdLocker) close() {
	if e.s != nil {
		e.s.Close()
	}
	e.cli.Close()
}

// tenureLocker is a blocking acquire of a kept-alive tenure lease.
type tenureLocker struct {
	c   *client.Client
	key string
	ttl time.Duration
}

func newTenure(endpoints []string, id, key string, ttl time.Duration) (*tenureLocker, error) {
	cfg := client.DefaultConfig()
	cfg.Addresses, cfg.Holder = endpoints, id
	c, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	return &tenureLocker{c: c, key: key, ttl: ttl}, nil
}

func (t *tenureLocker) lock(ctx context.Context) (*lock, error) {
	l, err := t.c.Acquire(ctx, t.key, client.WithTTL(t.ttl), client.WithWait(time.Until(deadlineOf(ctx))))
	if err != nil {
		return nil, err
	}
	return &lock{
		token: l.Token(),
		valid: func() bool { return l.Context().Err() == nil && time.Now().Before(l.Deadline()) },
		unlock: func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			l.Release(ctx)
		},
	}, nil
}

func (t *tenureLocker) close() {}

func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Minute)
}
