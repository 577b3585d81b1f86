// Package harness is the test toolkit that tenure's test suites share:
// polling a condition with a deadline (WaitFor, WaitUntil, Holds), contexts
// that end with the test (Context), free loopback ports (FreePorts,
// FreeAddr, Loopback), one HTTP request read whole (Send), the imports of
// a package's files (Imports), a case's wanted error (WantError), and
// the keys of one owner in a placement (OwnedBy).
//
// It is test-only: only _test.go files and other test packages import it,
// and every helper takes the test's testing.TB and fails it. It imports the
// standard library alone and must never import tenure's server packages
// (cluster, fsm, httpapi), so that the black-box suites under test/ can
// use it and package cluster's own tests can import it without a cycle.
// In-process server clusters are in the subpackage inproc.
package harness
