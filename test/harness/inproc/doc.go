// Package inproc starts whole tenure clusters inside the test process: n
// cluster.Nodes with fast Raft timings, connected either by
// raft.InmemTransport (which Isolate and Heal can partition) or by real TCP
// on free loopback ports, each optionally behind an httptest server that
// serves the HTTP layer a test hands in. It waits for established leaders
// and retries a call on whichever node leads, as a client would. Forge
// adds to a cluster's gossip a member with no server behind it, announcing
// whatever metadata a test gives it.
//
// It is test-only, like its parent package harness. It imports cluster and
// must never import httpapi: package httpapi's own tests use it, passing
// their handler through Options.Serve. For the same reason package
// cluster's own tests that drive whole clusters are in package cluster_test;
// the black-box suites under test/ do not use it at all, because they test
// the real binary.
package inproc
