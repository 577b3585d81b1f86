// Package check holds the rules that a request's fields must follow
// before a node proposes anything: holders, secrets, tokens, metadata and
// the prohibited holders of a key, and the *InvalidError that names the
// field that broke one.
//
// Its checks are pure functions of the values they are given: they must
// never read the state machine, propose a command or keep state.
package check
