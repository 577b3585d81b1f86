package fsm

import "fmt"

// MaxAccessorLen bounds By.Accessor.
const MaxAccessorLen = 128

// By runs Cmd on behalf of an operator: the events Cmd produces carry
// Accessor (the accessor id of the request's ACL token, or "anonymous").
// Cmd is applied exactly as it would be alone, with the same result. Cmd
// is neither a Batch nor a By; a By may sit inside a Batch.
type By struct {
	Accessor string
	Cmd      Command
}

// Type is TypeBy.
func (By) Type() Type { return TypeBy }

func (c By) encode(e *encoder) {
	e.string(c.Accessor)
	e.bytes(encodePlain(c.Cmd))
}

func decodeBy(d *decoder) (By, error) {
	accessor := d.string()
	raw := d.bytes()
	if d.err == nil && len(accessor) > MaxAccessorLen {
		d.fail(fmt.Errorf("accessor of %d bytes, the limit is %d", len(accessor), MaxAccessorLen))
	}
	if d.err != nil {
		return By{}, fmt.Errorf("%w: by: %w", ErrMalformed, d.err)
	}
	inner, err := decode(raw, false, false)
	if err != nil {
		return By{}, fmt.Errorf("by: %w", err)
	}
	return By{Accessor: accessor, Cmd: inner}, nil
}
