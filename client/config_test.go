package client

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		change  func(c *Config)
		wantErr string // substring; empty: valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"full url", func(c *Config) { c.Addresses = []string{"https://tenure-0:7500"} }, ""},
		{"no addresses", func(c *Config) { c.Addresses = nil }, "Addresses"},
		{"bad scheme", func(c *Config) { c.Addresses = []string{"ftp://x:1"} }, "scheme"},
		{"path", func(c *Config) { c.Addresses = []string{"http://x:1/v1"} }, "only scheme"},
		{"zero timeout", func(c *Config) { c.Timeout = 0 }, "Timeout"},
		{"negative retries", func(c *Config) { c.RetryMax = -1 }, "RetryMax"},
		{"no base delay", func(c *Config) { c.RetryBaseDelay = 0 }, "RetryBaseDelay"},
		{"no base delay without retries", func(c *Config) { c.RetryBaseDelay, c.RetryMax = 0, 0 }, ""},
		{"max below base", func(c *Config) { c.RetryMaxDelay = time.Millisecond }, "RetryMaxDelay"},
		{"http client timeout", func(c *Config) { c.HTTPClient = &http.Client{Timeout: time.Second} }, "HTTPClient.Timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.change(cfg)
			err := cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate() = %v, want an error naming %q", err, tt.wantErr)
			}
			if _, nerr := New(cfg); (nerr == nil) != (err == nil) {
				t.Errorf("New() = %v, want the same verdict as Validate (%v)", nerr, err)
			}
		})
	}
}

func TestDefaultConfigAddressesFromEnvironment(t *testing.T) {
	tests := []struct {
		name, env string
		want      []string
	}{
		{"unset", "", []string{DefaultHTTPAddr}},
		{"one", "10.0.0.1:7500", []string{"10.0.0.1:7500"}},
		{"list with blanks", " a:1, ,http://b:2 ,", []string{"a:1", "http://b:2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvHTTPAddr, tt.env)
			if got := DefaultConfig().Addresses; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Addresses = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNewCopiesConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addresses = []string{"a:1"}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addresses[0] = "b:2"
	cfg.Timeout = 0
	if got := c.route.pick(); got != "http://a:1" {
		t.Errorf("first address = %q after changing the config, want http://a:1", got)
	}
	if c.cfg.Timeout == 0 {
		t.Errorf("Timeout changed with the caller's config")
	}
}

func TestNewHolderID(t *testing.T) {
	a, b := NewHolderID(), NewHolderID()
	if a == b {
		t.Errorf("two holder ids are equal: %q", a)
	}
	if parts := strings.Split(a, "-"); len(parts) < 3 || len(parts[len(parts)-1]) != 8 {
		t.Errorf("holder id %q is not hostname-pid-<8 hex>", a)
	}
}
