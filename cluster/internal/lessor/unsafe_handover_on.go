//go:build tenure_unsafe_handover

package lessor

import "time"

// handedLeft, in this build, is a deliberate bug, the negative control
// that the fault suite must catch (test/jepsen): a stopping leader hands
// every lease over with no time left, so the next leader frees leases
// whose holders were told they hold them. Never built into a release.
func handedLeft(time.Duration) time.Duration { return time.Millisecond }

func init() {
	println("WARNING: server built with tenure_unsafe_handover: a hand-over gives every lease no time left")
}
