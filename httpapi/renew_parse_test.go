package httpapi

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client/wire"
)

// The bulk renewal's parser without reflection gives exactly what the
// strict decoder gives on every body it accepts, and accepts none that
// the strict decoder refuses: bodies made from the client's shape by
// random edits (a byte changed, dropped or doubled, whitespace added)
// are fed to both.
func TestParseRenewManyAgreesWithTheDecoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	seeds := []string{
		`{"holder":"h","leases":[]}`,
		`{"holder":"worker-1","leases":[{"key":"a/b","token":1},{"key":"c","token":18446744073709551615}]}`,
		" {\n \"holder\" : \"h\" ,\t\"leases\" : [ { \"key\" : \"k\" , \"token\" : 0 } ] } \n",
		`{"holder":"h","leases":[{"key":"k","token":7}]}`,
		`{"holder":"h","leases":[{"key":"k","token":7}],"brief":true}`,
		`{"holder":"h","leases":[],"brief":false}`,
		`{"holder":"h","secret":"0123456789abcdef0123456789abcdef","leases":[{"key":"k","token":7}],"brief":true}`,
		`{"holder":"h","leases":[{"key":"k","token":7,"secret":"s-1"},{"key":"j","token":8}]}`,
		`{"holder":"h","secret":"s","leases":[{"key":"k","token":7,"secret":"t"}]}`,
	}
	alphabet := []byte(`{}[]":,0123456789 .e-\ahkxtruefls` + "\x00\x7f\xff\n")
	accepted, refused := 0, 0
	check := func(body string) {
		t.Helper()
		got, ok := parseRenewMany([]byte(body))
		var want wire.RenewManyBody
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
	if _, ok := parseRenewMany([]byte(sb.String())); !ok {
		t.Fatal("parser refused the client's own shape")
	}
	check(sb.String())
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
