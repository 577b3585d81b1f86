// Package outcome declares the refusals of a node's lease and group calls
// that carry what the caller needs next: the lease that holds a key, the
// group whose compare-and-set failed, why a lease was lost, whose secret
// did not match. Package cluster names them by alias.
//
// It only declares errors and spells their messages: it must never decide
// an outcome, read the state machine or propose a command.
package outcome
