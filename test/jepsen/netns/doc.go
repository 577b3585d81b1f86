//go:build linux

// Package netns builds the network of the Jepsen suite out of Linux network
// namespaces and injects faults into it. It needs root, ip(8) and
// iptables(8); Available says what is missing.
//
// # Topology
//
// Setup creates a hub namespace holding a Linux bridge (br0) with the hub
// address (.254 of the subnet) and, per node, a namespace whose eth0 is one
// end of a veth pair; the other end is a port of the bridge. The veths are
// created inside the hub and their peers moved straight into the node
// namespaces, so nothing ever exists in the root namespace, and no address,
// route or firewall rule of the root namespace is touched. The harness sees
// the nodes from the hub: DialContext, HTTPClient.
//
// # Ownership
//
// Before it creates a namespace, Setup records the owning process (pid and
// start time) in /run/tenure-jepsen/<namespace>.owner. Sweep removes only
// namespaces whose owner is gone, so a concurrent run is never disturbed.
//
// # Faults
//
// Rules live in two chains of the filter table, both jumped from INPUT:
// TNJ-IN, in each node's namespace, holds the drop rules; TNJ-SHAPE, in
// each node's namespace and in the hub's, holds the loss and delay rules
// of packets arriving from shaped nodes. Heal flushes TNJ-IN, ClearShaping
// rewrites TNJ-SHAPE. No rule ever drops a packet to or from the hub
// address, so the harness observes every node through any partition and
// any loss.
//
// # Delay
//
// Shape implements Delay and Jitter with the netem qdisc when the kernel
// has it. Otherwise the packets a shaped node sends are queued where they
// arrive, in every other namespace (NFQUEUE with --queue-bypass, queue
// number = the last octet of the sender's address), and a delayer goroutine
// of this process per namespace, speaking nfnetlink_queue over a netlink
// socket opened in that namespace, accepts each one Delay±Jitter after it
// arrived, never before a packet of the same sender that arrived earlier.
// Queueing at the receiver, after the veth has released the packet from
// its socket, keeps TCP small queues from capping a delayed connection at
// a couple of packets per delay, as holding packets in the sender's OUTPUT
// hook would. If this process dies the queues lose their listener and
// packets bypass them undelayed. DelaySupported reports the mechanism in
// use. Loss is always an iptables statistic rule at the receivers.
package netns
