// Package clientmodule checks the Go client as a program that depends on
// it sees it: a module of its own whose graph a lease-only program can
// accept. Its test builds a scratch consumer module against
// github.com/tenure-io/tenure/client alone; it needs the go command.
package clientmodule
