package wire

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"
)

// appendJSON appends the wire form of the lease (the JSON that MarshalJSON
// returns) to b, without reflection: RenewManyResults.AppendJSON writes
// up to MaxRenewBatch leases with it.
func (l LeaseInfo) appendJSON(b []byte) []byte {
	b = append(b, `{"key":`...)
	b = appendJSONString(b, l.Key)
	b = appendField(b, "holder", l.Holder)
	b = append(b, `,"token":`...)
	b = strconv.AppendUint(b, l.Token, 10)
	b = appendField(b, "ttl", l.TTL.String())
	b = appendField(b, "state", string(l.State))
	if l.HasExpiresIn {
		b = appendField(b, "expires_in", l.ExpiresIn.String())
	}
	b = appendNonEmpty(b, "acquired_at", formatTime(l.AcquiredAt))
	b = appendNonEmpty(b, "renewed_at", formatTime(l.RenewedAt))
	if len(l.Metadata) > 0 {
		b = append(b, `,"metadata":{`...)
		for i, k := range slices.Sorted(maps.Keys(l.Metadata)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, l.Metadata[k])
		}
		b = append(b, '}')
	}
	b = appendNonEmpty(b, "reason", l.Reason)
	b = appendNonEmpty(b, "ending", l.Ending)
	b = append(b, `,"modify_index":`...)
	b = strconv.AppendUint(b, l.ModifyIndex, 10)
	b = appendNonEmpty(b, "secret", l.Secret) // an acquire's answer only
	return append(b, '}')
}

// appendField appends the member `,"name":"v"` of an object to b.
func appendField(b []byte, name, v string) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	return appendJSONString(b, v)
}

// appendNonEmpty is appendField for an omitempty member: it appends
// nothing when v is empty.
func appendNonEmpty(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	return appendField(b, name, v)
}

// AppendJSON appends the JSON of the answer of POST /v1/renew to b, as
// encoding/json would write it, without reflection.
func (r RenewManyResults) AppendJSON(b []byte) []byte {
	b = append(b, `{"results":[`...)
	for i, res := range r.Results {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"key":`...)
		b = appendJSONString(b, res.Key)
		b = append(b, `,"token":`...)
		b = strconv.AppendUint(b, res.Token, 10)
		b = append(b, `,"ok":`...)
		b = strconv.AppendBool(b, res.OK)
		if res.Lease != nil {
			b = append(b, `,"lease":`...)
			b = res.Lease.appendJSON(b)
		}
		b = appendNonEmpty(b, "error", res.Error)
		b = appendNonEmpty(b, "message", res.Message)
		b = appendNonEmpty(b, "reason", res.Reason)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string: the escapes of
// encoding/json without HTML escaping (control characters, quote,
// backslash, U+2028 and U+2029), invalid UTF-8 as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// UnmarshalJSON decodes the answer of POST /v1/renew in one pass: each
// lease into its wire form, without a second decoding per lease (up to
// MaxRenewBatch of them).
func (r *RenewManyResults) UnmarshalJSON(data []byte) error {
	var w struct {
		Results []struct {
			RenewResultBody
			Lease *leaseJSON `json:"lease,omitempty"` // hides RenewResultBody.Lease
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	out := RenewManyResults{Results: make([]RenewResultBody, len(w.Results))}
	leases := make([]LeaseInfo, len(w.Results))
	for i, res := range w.Results {
		out.Results[i] = res.RenewResultBody
		if res.Lease != nil {
			l, err := res.Lease.info()
			if err != nil {
				return err
			}
			leases[i] = l
			out.Results[i].Lease = &leases[i]
		}
	}
	*r = out
	return nil
}
