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

// The bulk renewal's parser without reflection gives exactly what the
// strict decoder gives on every body it accepts, and accepts none that
// the strict decoder refuses: bodies made from the client's shape by
// random edits (a byte changed, dropped or doubled, whitespace added)
// are fed to both.
func TestParseRenewManyAgreesWithTheDecoder(t *testing.T) {
	// What the client sends, at the largest batch.
	var sb strings.Builder
	sb.WriteString(`{"holder":"h","secret":"0123456789abcdef0123456789abcdef","leases":[`)
	for i := range 1024 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"key":"group/key-%d","token":%d}`, i, 1000+i)
	}
	sb.WriteString(`]}`)
	parserAgreesWithTheDecoder(t, parseRenewMany, sb.String(),
		`{"holder":"h","leases":[]}`,
		`{"holder":"worker-1","leases":[{"key":"a/b","token":1},{"key":"c","token":18446744073709551615}]}`,
		" {\n \"holder\" : \"h\" ,\t\"leases\" : [ { \"key\" : \"k\" , \"token\" : 0 } ] } \n",
		`{"holder":"h","leases":[{"key":"k","token":7}]}`,
		`{"holder":"h","leases":[{"key":"k","token":7}],"brief":true}`,
		`{"holder":"h","leases":[],"brief":false}`,
		`{"holder":"h","secret":"0123456789abcdef0123456789abcdef","leases":[{"key":"k","token":7}],"brief":true}`,
		`{"holder":"h","leases":[{"key":"k","token":7,"secret":"s-1"},{"key":"j","token":8}]}`,
		`{"holder":"h","secret":"s","leases":[{"key":"k","token":7,"secret":"t"}]}`,
		// Loads, as a reporting worker's keep-alive sends them.
		`{"holder":"w#1","secret":"s","leases":[{"key":"k","token":7,"load":12.5},{"key":"j","token":8}],"brief":true,"load":40}`,
		`{"holder":"h","leases":[{"key":"k","token":7,"secret":"t","load":0}],"load":1e3}`,
		`{"holder":"h","leases":[{"key":"k","token":7,"load":-0.5E-2}],"brief":false}`,
		`{"holder":"h","leases":[{"key":"k","token":7,"load":1e400}]}`,
		`{"holder":"h","leases":[{"key":"k","token":7,"load":01}]}`,
		`{"holder":"h","leases":[],"load":3}`)
}

// The body of a reporting worker's keep-alive, as the Go client encodes
// it, takes the parser too.
func TestParseRenewManyReadsTheClientsLoads(t *testing.T) {
	load, total := 12.5, 1e-3
	clients, err := json.Marshal(wire.RenewManyBody{Holder: "w#1", Secret: "0123456789abcdef0123456789abcdef", Brief: true, Load: &total,
		Leases: []wire.LeaseRef{{Key: "k", Token: 7, Load: &load}, {Key: "j", Token: 8, Secret: "s", Load: &load}, {Key: "i", Token: 9}}})
	if err != nil {
		t.Fatal(err)
	}
	parserAgreesWithTheDecoder(t, parseRenewMany, string(clients), string(clients))
}

func TestParseLeaseRefAgreesWithTheDecoder(t *testing.T) {
	clients, err := json.Marshal(wire.LeaseRefBody{Holder: "worker-7", Token: 42, Secret: "0123456789abcdef0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	parserAgreesWithTheDecoder(t, parseLeaseRef, string(clients),
		`{"holder":"h","token":0,"secret":""}`,
		`{"holder":"worker-1","token":18446744073709551615,"secret":"s"}`,
		" {\n \"holder\" : \"h\" ,\t\"token\" : 7 , \"secret\" : \"x\" } \n")
}

// parserAgreesWithTheDecoder checks a parser of the client's own body
// shape against decodeRaw: on the seeds, on thousands of edits of them,
// and on clients, the body the Go client sends, which it must accept.
// Every body the parser accepts, the decoder accepts with the same result.
func parserAgreesWithTheDecoder[T any](t *testing.T, parse func([]byte) (T, bool), clients string, seeds ...string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`{}[]":,0123456789 .e-\ahkxtruefls` + "\x00\x7f\xff\n")
	accepted, refused := 0, 0
	check := func(body string) {
		t.Helper()
		got, ok := parse([]byte(body))
		var want T
		err := decodeRaw([]byte(body), &want)
		if !ok {
			refused++
			return
		}
		accepted++
		if err != nil {
			t.Fatalf("parser accepted %q, which the decoder refuses: %v", body, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("body %q: parser %+v, decoder %+v", body, got, want)
		}
	}
	for _, s := range seeds {
		check(s)
		for range 3000 {
			b := []byte(s)
			for range 1 + rng.IntN(3) {
				i := rng.IntN(len(b))
				switch rng.IntN(4) {
				case 0:
					b[i] = alphabet[rng.IntN(len(alphabet))]
				case 1:
					b = append(b[:i:i], b[i+1:]...)
				case 2:
					b = append(b[:i+1:i+1], b[i:]...)
				default:
					b = append(b[:i:i], append([]byte(" "), b[i:]...)...)
				}
			}
			check(string(b))
		}
	}
	if _, ok := parse([]byte(clients)); !ok {
		t.Fatal("parser refused the client's own shape")
	}
	check(clients)
	if accepted < 100 || refused < 100 {
		t.Fatalf("edits exercised too little: %d accepted, %d refused", accepted, refused)
	}
	t.Logf("%d bodies accepted and equal, %d left to the decoder", accepted, refused)
}

// Bodies the parser must leave to the decoder, valid or not.
func TestParseRenewManyLeavesOtherShapesToTheDecoder(t *testing.T) {
	for _, body := range []string{
		`{"leases":[],"holder":"h"}`,                                         // other field order
		`{"holder":"h\u0041","leases":[]}`,                                   // an escape
		`{"holder":"h","leases":[{"key":"k","token":1.0}]}`,                  // not an integer
		`{"holder":"h","leases":[{"key":"k","token":01}]}`,                   // leading zero
		`{"holder":"h","leases":[{"key":"k","token":18446744073709551616}]}`, // overflow
		`{"holder":"h","leases":[],"extra":1}`,                               // unknown field
		`{"holder":"h","leases":[]} {}`,                                      // trailing value
		`{"holder":"h","leases":[{"token":1,"key":"k"}]}`,                    // other order inside
		`{"holder":"é","leases":[]}`,                                         // non-ASCII
		`{"holder":"h","leases":[],"secret":"s"}`,                            // secret after the leases
		`{"holder":"h","leases":[{"key":"k","secret":"s","token":1}]}`,       // secret before the token
	} {
		if _, ok := parseRenewMany([]byte(body)); ok {
			t.Errorf("parser accepted %s", body)
		}
	}
}
