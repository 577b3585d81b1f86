// Package clock is the node's injected time source, as the lessor, the
// placement balancer and stuck tracker, and the retention sweeper read it:
// one Clock and Timer that they all share, and the real monotonic clock.
package clock
