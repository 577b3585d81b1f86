package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
)

// events prints the event history: the events after -index (without it,
// the oldest the answering server holds), then, with -follow, every new
// event as it happens, one line each (one JSON object per line with
// -json), following the leader, until interrupted.
func (e *env) events(ctx context.Context, args []string) int {
	var f client.EventFilter
	var index uint64
	var types string
	var follow bool
	fs, cf := e.clusterFlagSet("events", "events [-index N] [-prefix P] [-type T[,T…]] [-follow] [-json]")
	fs.Uint64Var(&index, "index", 0, "show the events after this Raft index (default: from the oldest the server holds)")
	fs.StringVar(&f.Prefix, "prefix", "", "only events whose key, group or worker starts with this prefix")
	fs.StringVar(&types, "type", "", "only events of these types, comma-separated: "+strings.Join(eventTypes, ", "))
	fs.BoolVar(&follow, "follow", false, "keep printing new events as they happen, until interrupted")
	if _, code, ok := e.parse(fs, args, 0, 0); !ok {
		return code
	}
	if types != "" {
		for _, t := range strings.Split(types, ",") {
			t = strings.TrimSpace(t)
			if !slices.Contains(eventTypes, t) {
				return e.usageError(fs, fmt.Sprintf("-type: unknown event type %q, want one of %s", t, strings.Join(eventTypes, ", ")))
			}
			f.Types = append(f.Types, t)
		}
	}
	c, err := client.New(cf.config())
	if err != nil {
		return e.fail(err)
	}
	var evs []client.Event
	var next uint64
	if given(fs, "index") {
		evs, next, err = c.Events().Since(ctx, index, f)
	} else {
		evs, next, err = c.Events().List(ctx, f)
	}
	if err != nil {
		return e.fail(compactedHint(err))
	}
	if !follow {
		if evs == nil {
			evs = []client.Event{}
		}
		return e.show(cf.json, wire.EventList{Events: evs, Index: next}, nil, func() {
			if len(evs) == 0 {
				fmt.Fprintln(e.stdout, "no events")
				return
			}
			e.printEvents(false, evs)
			if len(evs) >= eventsPage {
				// A full answer: there may be more after it.
				fmt.Fprintf(e.stderr, "%d events shown; for the next ones: tenure events -index %d (or -follow)\n", len(evs), next)
			}
		})
	}
	e.printEvents(cf.json, evs)
	for resp := range c.Events().Watch(ctx, next, f) {
		if resp.Err != nil {
			return e.fail(compactedHint(resp.Err))
		}
		e.printEvents(cf.json, resp.Events)
	}
	return exitOK // interrupted
}

// printEvents prints one line per event: JSON, or "INDEX TIME TYPE
// field=value…", TIME the leader's RFC 3339 time of the entry in UTC to
// the millisecond ("-" for an entry without one).
func (e *env) printEvents(asJSON bool, evs []client.Event) {
	for _, ev := range evs {
		if asJSON {
			b, _ := json.Marshal(ev)
			fmt.Fprintf(e.stdout, "%s\n", b)
			continue
		}
		at := "-"
		if !ev.Time.IsZero() {
			at = ev.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00")
		}
		parts := []string{fmt.Sprint(ev.Index), at, ev.Type}
		add := func(name, v string) {
			if v != "" {
				parts = append(parts, name+"="+v)
			}
		}
		add("key", ev.Key)
		add("holder", ev.Holder)
		if ev.Token != 0 {
			add("token", fmt.Sprint(ev.Token))
		}
		add("group", ev.Group)
		add("worker", ev.Worker)
		add("reason", ev.Reason)
		if ev.Type == client.EventControlChanged {
			add("disabled", fmt.Sprint(ev.Disabled))
			add("prohibited", strings.Join(ev.Prohibited, ","))
		}
		add("by", ev.By)
		fmt.Fprintln(e.stdout, strings.Join(parts, " "))
	}
}

// compactedHint says what to do when the history no longer reaches back.
func compactedHint(err error) error {
	var ae *client.APIError
	if errors.Is(err, client.ErrCompacted) && errors.As(err, &ae) {
		return fmt.Errorf("%w (the server keeps events after index %d: read the current state, e.g. tenure leases list, then follow from -index %d)", err, ae.OldestIndex, ae.OldestIndex)
	}
	return err
}

var eventTypes = client.EventTypes()

// eventsPage is the most events a server answers at once (a log entry's
// events are never split, so an answer may hold a few more).
const eventsPage = 1000
