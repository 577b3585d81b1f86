package nodeconfig

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster/internal/certs"
)

func valid() Config {
	c := DefaultConfig()
	c.NodeID, c.DataDir = "n1", "/tmp/n1"
	return c
}

func TestDefaultConfigValidates(t *testing.T) {
	if err := valid().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := DefaultConnLimits().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	for _, tt := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.NodeID = "" }, "node-id: required"},
		{func(c *Config) { c.MinTTL = c.ElectionTimeout }, "min-ttl:"},
		{func(c *Config) { c.DeadServerCleanup = AddressGrace(*c) - time.Millisecond }, "dead-server-cleanup:"},
		{func(c *Config) { c.Conns.RaftMaxConns = 0 }, "raft-max-conns:"},
		{func(c *Config) { c.ACLDefaultPolicy = "maybe" }, "acl-default-policy:"},
	} {
		c := valid()
		tt.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate() = %v, want it to name %q", err, tt.want)
		}
	}
}

func TestValidateRaftAuth(t *testing.T) {
	c := valid()
	c.ACLEnabled = true
	err := c.ValidateRaftAuth()
	if plainRaftACLs {
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if !errors.Is(err, ErrACLsNeedAuthenticatedRaft) {
		t.Fatalf("ValidateRaftAuth() = %v, want ErrACLsNeedAuthenticatedRaft", err)
	}
	c.TLS = certs.Files{CertFile: "c", KeyFile: "k", CAFile: "ca"}
	if err := c.ValidateRaftAuth(); err != nil {
		t.Fatal(err)
	}
}

func TestHandoverTimeoutAndHooks(t *testing.T) {
	c := valid()
	if got := c.HandoverTimeout(); got != time.Second {
		t.Errorf("HandoverTimeout() = %v, want 1s", got)
	}
	c.ElectionTimeout = time.Second
	if got := c.HandoverTimeout(); got != 3*time.Second {
		t.Errorf("HandoverTimeout() = %v, want 3s", got)
	}
	TestHooks(&c).FreeKeySweep = time.Minute
	if c.hooks.FreeKeySweep != time.Minute {
		t.Error("TestHooks does not point into the config")
	}
}
