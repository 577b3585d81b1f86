//go:build race

package cluster_test

// raceDetector: the race detector slows the code it checks several times
// over; tests of timings skip under it.
const raceDetector = true
