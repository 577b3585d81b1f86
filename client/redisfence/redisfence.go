// Package redisfence makes Redis refuse the writes of a superseded lease
// holder: a Lua script compares the writer's fencing token with the
// highest one recorded for the resource, raises it, and runs the write, in
// one step. It imports no Redis client: give New your client's EVAL.
//
// A lease alone cannot make a writer exclusive: a holder that pauses after
// it last checked its lease may write after the lease has passed to another
// holder. Tokens of successive holders of a key strictly increase
// (client.Lease.Token), so a store that records the highest token it has
// seen per resource and refuses lower ones, atomically with the write,
// keeps a superseded holder's writes out. Redis runs a script atomically,
// so the check and the write cannot be separated by another client's
// script or command.
//
// The script (fence.lua, also Script) keeps the highest token under a fence
// key of the caller's choosing, one per resource, and runs one Redis
// command after the check: the command's keys come first, then its other
// arguments (SET key value, HSET key field value, SADD key member, INCRBY
// key n, RPUSH key value ...). On Redis Cluster, give the fence key and the
// command's keys one hash tag (for example "{session:42}:fence" and
// "{session:42}") so that they live in one slot.
//
// A read-modify-write whose read is not in the script (GET, compute, then
// a fenced SET) calls Advance before the read: otherwise a superseded
// holder can write between the new holder's read and its write.
//
// If the command itself fails (a wrong type, say), the raised token stays
// raised: Redis does not undo a script's earlier writes. That refuses no
// holder wrongly: the token was the writer's own.
package redisfence

import (
	"context"
	_ "embed" // the script
	"fmt"
	"strconv"

	"github.com/tenure-io/tenure/client"
)

// Script is the Lua script Do runs with EVAL.
//
//go:embed fence.lua
var Script string

// ErrStale: a token higher than the writer's is recorded under the fence
// key, so a newer holder has written; the writer's lease has passed to
// another holder. errors.Is(err, client.ErrStaleToken) holds too.
var ErrStale = fmt.Errorf("redisfence: %w: a newer holder has written to the resource", client.ErrStaleToken)

// Eval runs script with EVAL (or EVALSHA, falling back to EVAL) and returns
// its reply as the client decodes it: an array as []any, integers as
// int64, bulk strings as string or []byte. With go-redis:
//
//	func(ctx context.Context, script string, keys []string, args ...any) (any, error) {
//		return rdb.Eval(ctx, script, keys, args...).Result()
//	}
type Eval func(ctx context.Context, script string, keys []string, args ...any) (any, error)

// Fence runs fenced writes through eval. It holds no state of its own and
// is safe for concurrent use if eval is.
type Fence struct {
	eval Eval
}

// New returns a Fence that runs its script through eval.
func New(eval Eval) *Fence { return &Fence{eval: eval} }

// Do runs the Redis command cmd on keys with args if token is at least the
// highest token recorded under fenceKey, and records token as the highest;
// it returns the command's reply. If a higher token is recorded it writes
// nothing and returns ErrStale. Any other error (Redis cannot be reached,
// the command failed) says nothing of the fence: treat the write as not
// done, as with any failed Redis call.
func (f *Fence) Do(ctx context.Context, fenceKey string, token uint64, keys []string, cmd string, args ...any) (any, error) {
	if fenceKey == "" {
		return nil, fmt.Errorf("redisfence: fence key: %w: must not be empty", client.ErrInvalid)
	}
	if token == 0 {
		return nil, fmt.Errorf("redisfence: token: %w: must be a lease's token, 1 or more", client.ErrInvalid)
	}
	if cmd == "" {
		return nil, fmt.Errorf("redisfence: command: %w: must not be empty", client.ErrInvalid)
	}
	argv := append([]any{strconv.FormatUint(token, 10), cmd}, args...)
	reply, err := f.eval(ctx, Script, append([]string{fenceKey}, keys...), argv...)
	if err != nil {
		return nil, fmt.Errorf("redisfence: %s under %q: %w", cmd, fenceKey, err)
	}
	r, ok := reply.([]any)
	if !ok || len(r) == 0 {
		return nil, fmt.Errorf("redisfence: %s under %q: unexpected reply %#v", cmd, fenceKey, reply)
	}
	status, ok := r[0].(int64)
	if !ok {
		return nil, fmt.Errorf("redisfence: %s under %q: unexpected reply %#v (want an integer status first)", cmd, fenceKey, reply)
	}
	switch status {
	case 1:
		var out any
		if len(r) > 1 {
			out = r[1]
		}
		return out, nil
	case 0:
		highest := ""
		if len(r) > 1 {
			highest = fmt.Sprint(text(r[1]))
		}
		return nil, fmt.Errorf("%w (fence key %q: token %d, highest %s)", ErrStale, fenceKey, token, highest)
	}
	return nil, fmt.Errorf("redisfence: %s under %q: unexpected reply %#v", cmd, fenceKey, reply)
}

// Advance records token as the highest under fenceKey unless a higher one
// is recorded, and returns ErrStale then; it writes nothing else. A
// read-modify-write calls it before its read, so that no superseded
// holder's write lands between the read and the fenced write.
func (f *Fence) Advance(ctx context.Context, fenceKey string, token uint64) error {
	_, err := f.Do(ctx, fenceKey, token, nil, "PING")
	return err
}

// text turns a bulk string reply into a string, whichever type the client
// decoded it to.
func text(v any) any {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}
