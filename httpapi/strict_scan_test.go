package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// walkStrictTokens is the strict walk as it was written on json.Decoder.Token,
// kept as the oracle of the byte scanner. It reads one JSON value from dec, checking objects against t.
// Syntax errors end the walk without an error: the decoder reports them.
func walkStrictTokens(dec *json.Decoder, t reflect.Type, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return errSyntax
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	sh := shapeOf(t)
	switch delim {
	case '[':
		for dec.More() {
			if err := walkStrictTokens(dec, sh.elem, path+"[]"); err != nil {
				return err // as written, a syntax error here looped for ever
			}
		}
	case '{':
		seen := make(map[string]bool)
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return errSyntax
			}
			name, _ := tok.(string)
			field, next, err := sh.member(seen, path, name)
			if err != nil {
				return err
			}
			if err := walkStrictTokens(dec, next, field); err != nil {
				return err
			}
		}
	}
	_, _ = dec.Token() // the closing delimiter
	return nil
}

// errSyntax marks where the oracle stopped at a syntax error (the strict
// check then leaves the error to the decoder).
var errSyntax = errors.New("syntax")

// randomBody writes a JSON text for t's shape with the faults the strict
// check is for: fields twice, in another case, unknown, escaped names,
// wrong kinds, and sometimes cut short.
func randomBody(rng *rand.Rand, t reflect.Type, depth int) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	scalar := []string{`1`, `-2.5e3`, `"x"`, `"a\"b\\c\u0041"`, `true`, `null`, `[]`, `{}`}
	if t == nil || depth > 4 {
		return scalar[rng.IntN(len(scalar))]
	}
	switch t.Kind() {
	case reflect.Struct:
		var names []string
		for n := range jsonFields(t) {
			names = append(names, n)
		}
		var parts []string
		for k := rng.IntN(4); k >= 0; k-- {
			n := names[rng.IntN(len(names))]
			switch rng.IntN(8) {
			case 0:
				n = strings.ToUpper(n[:1]) + n[1:]
			case 1:
				n = "unknown"
			case 2:
				n = strings.Replace(n, n[:1], `\u00`+fmt.Sprintf("%02x", n[0]), 1)
			}
			parts = append(parts, fmt.Sprintf(`"%s" : %s`, n, randomBody(rng, jsonFields(t)[strings.ToLower(n[:1])+n[1:]], depth+1)))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case reflect.Slice, reflect.Array:
		var parts []string
		for k := rng.IntN(3); k > 0; k-- {
			parts = append(parts, randomBody(rng, t.Elem(), depth+1))
		}
		return "[ " + strings.Join(parts, " , ") + "]"
	case reflect.Map:
		return fmt.Sprintf(`{"a":%s,"b":%s}`, randomBody(rng, t.Elem(), depth+1), randomBody(rng, t.Elem(), depth+1))
	}
	return scalar[rng.IntN(len(scalar))]
}

// The byte scanner finds what the walk on json.Decoder.Token found, with
// the same error, on every body and every prefix of it.
func TestStrictScannerMatchesTokenWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	types := []reflect.Type{reflect.TypeOf(wire.RenewManyBody{}), reflect.TypeOf(wire.AcquireBody{}), reflect.TypeOf(map[string]any{})}
	for i := 0; i < 3000; i++ {
		typ := types[rng.IntN(len(types))]
		body := randomBody(rng, typ, 0)
		for _, raw := range []string{body, body[:rng.IntN(len(body)+1)]} {
			dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
			dec.UseNumber()
			want := walkStrictTokens(dec, typ, "")
			if errors.Is(want, errSyntax) {
				want = nil
			}
			got := checkStrict([]byte(raw), typ)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s %s:\n scanner: %v\n  tokens: %v", typ, raw, got, want)
			}
		}
	}
}

// A body with a syntax error inside an array used to make the strict check
// loop for ever (json.Decoder.More kept saying more, Token kept failing):
// one such request held a CPU until the server stopped.
func TestStrictCheckEndsOnBrokenArrays(t *testing.T) {
	for _, raw := range []string{`{"holder":"h","leases":[1 x]}`, `{"leases":[{"key":"k"} {"key":"j"}]}`, `[1 2]`, `{"a":[[}`} {
		done := make(chan error, 1)
		go func() {
			done <- decodeBody(httptest.NewRequest("POST", "/v1/renew", strings.NewReader(raw)), &wire.RenewManyBody{})
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: accepted", raw)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the strict check did not end", raw)
		}
	}
}
