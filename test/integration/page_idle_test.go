package integration

import (
	"strings"
	"testing"
	"time"
)

// sentJS makes the page record every request its script sends from now
// on (the script sends each one through fetch), and forget the ones
// recorded so far.
const sentJS = `(() => {
	if (!window.sentPaths) {
		window.sentPaths = [];
		const send = window.fetch;
		window.fetch = function (input, init) { window.sentPaths.push(String(input)); return send.apply(this, arguments); };
	}
	window.sentPaths.length = 0;
	return true;
})()`

// idleWindow is how long a view of an idle cluster is watched for
// requests; the cluster view's is longer than the 15s after which earlier
// releases of the page read the status again, so that such a timer shows.
func idleWindow(view string) time.Duration {
	if view == "cluster" {
		return 17 * time.Second
	}
	return 4 * time.Second
}

// pageIsIdle checks, view by view, that once the page has read what it
// shows and sent its blocking queries, it sends nothing while nothing
// changes: the answers it waits on come only when something does. The
// leases view, while it shows held leases, reads the list every half
// second.
func pageIsIdle(t *testing.T, b *browser) {
	for _, view := range []string{"cluster", "leases", "groups", "workers", "events"} {
		b.view(view)
		// Settled: no request for a second (the view's first reads,
		// then the blocking ones that wait).
		if _, err := eval[bool](b, sentJS); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for seen := -1; ; {
			time.Sleep(time.Second)
			n, err := eval[int](b, `window.sentPaths.length`)
			if err != nil {
				t.Fatal(err)
			}
			if n == seen || view == "leases" && deadlinesShown(t, b) {
				break
			}
			if time.Now().After(deadline) {
				sent, _ := eval[[]string](b, `window.sentPaths`)
				t.Fatalf("the %s view never settled: %d requests in 20s: %s", view, n, strings.Join(sent, " "))
			}
			seen = n
		}
		if _, err := eval[bool](b, sentJS); err != nil {
			t.Fatal(err)
		}
		time.Sleep(idleWindow(view))
		sent, err := eval[[]string](b, `window.sentPaths`)
		if err != nil {
			t.Fatal(err)
		}
		if view == "leases" && deadlinesShown(t, b) {
			// Renewals move deadlines without a log entry: while it shows
			// held leases, the view takes the leader's times left again
			// every half second, and sends nothing else.
			for _, p := range sent {
				if !strings.HasPrefix(p, "/v1/leases?") {
					t.Errorf("the leases view sent %s while nothing changed", p)
				}
			}
			if most := int(idleWindow(view)/(500*time.Millisecond)) + 1; len(sent) > most {
				t.Errorf("the leases view sent %d requests in %v while it showed held leases, want at most %d (one every half second)", len(sent), idleWindow(view), most)
			}
			continue
		}
		if len(sent) > 0 {
			t.Errorf("the %s view sent %d requests in %v while nothing changed: %s", view, len(sent), idleWindow(view), strings.Join(sent, " "))
		} else {
			t.Logf("the %s view sent nothing in %v", view, idleWindow(view))
		}
	}
}

// deadlinesShown says whether the leases view shows the time left of a
// held lease.
func deadlinesShown(t *testing.T, b *browser) bool {
	t.Helper()
	shown, err := eval[bool](b, `document.querySelectorAll('#leases td.expires[data-deadline]').length > 0`)
	if err != nil {
		t.Fatal(err)
	}
	return shown
}
