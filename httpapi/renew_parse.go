package httpapi

import (
	"net/http"
	"strconv"

	"github.com/tenure-io/tenure/client/wire"
)

// parseRenewMany reads a bulk renewal's body of the one shape that the
// Go client sends, {"holder":"…","secret":"…","leases":[{"key":"…",
// "token":N},…]} with "secret" optional (after holder, and after each
// token), an optional "load":X after each lease's token or secret, and
// an optional "brief":true|false and then an optional "load":X last,
// with any whitespace between tokens, strings of printable ASCII without
// escapes, and tokens of decimal digits that fit in 64 bits. ok is false
// for anything else, valid or not: the caller then decodes raw with
// decodeRaw, which accepts every valid body and names what is wrong with
// the others. On the bodies it accepts, the result is what decodeRaw
// gives (TestParseRenewManyAgreesWithTheDecoder); reflection was a third
// of a bulk renewal's cost.
func parseRenewMany(raw []byte) (body wire.RenewManyBody, ok bool) {
	p := renewParser{strictScanner{b: raw}}
	if !p.lit('{') || !p.name("holder") {
		return body, false
	}
	if body.Holder, ok = p.str(); !ok {
		return body, false
	}
	if !p.lit(',') {
		return body, false
	}
	if p.peekName("secret") {
		if !p.name("secret") {
			return body, false
		}
		if body.Secret, ok = p.str(); !ok || !p.lit(',') {
			return body, false
		}
	}
	if !p.name("leases") || !p.lit('[') {
		return body, false
	}
	body.Leases = []wire.LeaseRef{}
	if p.peek(']') {
		p.i++
	} else {
		for {
			var ref wire.LeaseRef
			if !p.lit('{') || !p.name("key") {
				return body, false
			}
			if ref.Key, ok = p.str(); !ok {
				return body, false
			}
			if !p.lit(',') || !p.name("token") {
				return body, false
			}
			if ref.Token, ok = p.uint(); !ok {
				return body, false
			}
			if p.peek(',') {
				p.i++
				if p.peekName("secret") {
					if !p.name("secret") {
						return body, false
					}
					if ref.Secret, ok = p.str(); !ok {
						return body, false
					}
					if p.peek(',') {
						p.i++
						if ref.Load, ok = p.load(); !ok {
							return body, false
						}
					}
				} else if ref.Load, ok = p.load(); !ok {
					return body, false
				}
			}
			if !p.lit('}') {
				return body, false
			}
			body.Leases = append(body.Leases, ref)
			if p.peek(',') {
				p.i++
				continue
			}
			if !p.lit(']') {
				return body, false
			}
			break
		}
	}
	if p.peek(',') && p.peekNameAfterComma("brief") { // the optional "brief": true or false
		p.i++
		if !p.name("brief") {
			return body, false
		}
		if body.Brief, ok = p.boolean(); !ok {
			return body, false
		}
	}
	if p.peek(',') { // the optional "load", last
		p.i++
		if body.Load, ok = p.load(); !ok {
			return body, false
		}
	}
	if !p.lit('}') {
		return body, false
	}
	p.space()
	return body, p.i == len(p.b)
}

// parseLeaseRef reads the body of a renewal or release of one lease in
// the shape the Go client sends, {"holder":"…","token":N,"secret":"…"},
// under the rules of parseRenewMany, which it shares: ok is false for
// anything else, and the caller decodes raw with decodeRaw
// (TestParseLeaseRefAgreesWithTheDecoder).
func parseLeaseRef(raw []byte) (body wire.LeaseRefBody, ok bool) {
	p := renewParser{strictScanner{b: raw}}
	if !p.lit('{') || !p.name("holder") {
		return body, false
	}
	if body.Holder, ok = p.str(); !ok || !p.lit(',') || !p.name("token") {
		return body, false
	}
	if body.Token, ok = p.uint(); !ok || !p.lit(',') || !p.name("secret") {
		return body, false
	}
	if body.Secret, ok = p.str(); !ok || !p.lit('}') {
		return body, false
	}
	p.space()
	return body, p.i == len(p.b)
}

// decodeLeaseRef reads the body of a renewal or release of one lease:
// the client's own shape without reflection, any other through the
// strict decoder.
func decodeLeaseRef(r *http.Request) (wire.LeaseRefBody, error) {
	raw, err := readBody(r)
	if err != nil {
		return wire.LeaseRefBody{}, err
	}
	if body, ok := parseLeaseRef(raw); ok {
		return body, nil
	}
	var body wire.LeaseRefBody
	return body, decodeRaw(raw, &body)
}

// renewParser reads b from i, skipping whitespace as strictScanner does.
type renewParser struct{ strictScanner }

// peek skips whitespace and reports whether c is next.
func (p *renewParser) peek(c byte) bool {
	p.space()
	return p.i < len(p.b) && p.b[p.i] == c
}

// lit skips whitespace and c.
func (p *renewParser) lit(c byte) bool {
	if !p.peek(c) {
		return false
	}
	p.i++
	return true
}

// peekName skips whitespace and reports whether the string "field" is
// next, without reading it.
func (p *renewParser) peekName(field string) bool {
	p.space()
	rest := p.b[p.i:]
	return len(rest) >= len(field)+2 && rest[0] == '"' && string(rest[1:1+len(field)]) == field && rest[1+len(field)] == '"'
}

// name reads "field" followed by a colon.
func (p *renewParser) name(field string) bool {
	s, ok := p.str()
	return ok && s == field && p.lit(':')
}

// str reads a string of printable ASCII without escapes.
func (p *renewParser) str() (string, bool) {
	if !p.lit('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return "", false
		}
		p.i++
	}
	return "", false
}

// boolean reads true or false.
func (p *renewParser) boolean() (bool, bool) {
	p.space()
	for _, w := range [...]string{"true", "false"} {
		if len(p.b)-p.i >= len(w) && string(p.b[p.i:p.i+len(w)]) == w {
			p.i += len(w)
			return w == "true", true
		}
	}
	return false, false
}

// peekNameAfterComma reports whether a comma and then the string "field"
// are next, without reading them.
func (p *renewParser) peekNameAfterComma(field string) bool {
	q := *p
	q.i++ // the comma
	return q.peekName(field)
}

// load reads "load" and a JSON number: an optional minus, an integer
// part without a leading zero, an optional fraction and exponent, as
// strconv.ParseFloat (the decoder's) reads it; one out of the float64
// range is refused, as the decoder refuses it.
func (p *renewParser) load() (*float64, bool) {
	if !p.name("load") {
		return nil, false
	}
	p.space()
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	intStart := p.i
	if n := digits(); n == 0 || n > 1 && p.b[intStart] == '0' {
		return nil, false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	x, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
	if err != nil {
		return nil, false
	}
	return &x, true
}

// uint reads a JSON number that is a uint64: digits, no leading zero, no
// fraction or exponent, no overflow.
func (p *renewParser) uint() (uint64, bool) {
	p.space()
	start := p.i
	var n uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		d := uint64(p.b[p.i] - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
		p.i++
	}
	digits := p.i - start
	if digits == 0 || (digits > 1 && p.b[start] == '0') {
		return 0, false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	return n, true
}
