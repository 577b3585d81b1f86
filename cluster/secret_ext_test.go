package cluster_test

// testSecret is the lease secret of the tests' acquisitions, renewals
// and releases.
const testSecret = "7e57c0de7e57c0de7e57c0de7e57c0de"
