package httpapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tenure-io/tenure/client/wire"
)

// checkStrict refuses a request body that encoding/json would accept but
// read other than the sender meant: invalid UTF-8 (replaced silently), a
// field name that matches a field only without regard to case ("Holder"
// for "holder"), and an object that names one field twice (the last one
// wins). It walks raw along t, the type the body decodes into; a value of
// the wrong JSON kind is left to the decoder, which names it.
func checkStrict(raw []byte, t reflect.Type) error {
	if !utf8.Valid(raw) {
		return badRequest(wire.CodeInvalidBody, "body", "body is not valid UTF-8")
	}
	sc := strictScanner{b: raw}
	_, err := sc.walk(t, "")
	return err
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// strictScanner walks a JSON text byte by byte (a bulk renewal's body has
// thousands of values: json.Decoder.Token cost more than the decoding).
// On a syntax error it stops without an error: the decoder reports it.
type strictScanner struct {
	b []byte
	i int
}

func (s *strictScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// walk reads one value, checking objects against t. ok is false when the
// text is not valid JSON at this point: the walk stops there.
func (s *strictScanner) walk(t reflect.Type, path string) (ok bool, err error) {
	s.space()
	if s.i >= len(s.b) {
		return false, nil
	}
	switch s.b[s.i] {
	case '"':
		_, ok := s.str(false)
		return ok, nil
	case '[', '{':
	default:
		return s.scalar(), nil
	}
	sh := shapeOf(t)
	if s.b[s.i] == '[' {
		s.i++
		return s.each(']', func() (bool, error) { return s.walk(sh.elem, path+"[]") })
	}
	s.i++
	seen := make(map[string]bool)
	return s.each('}', func() (bool, error) {
		s.space()
		name, ok := s.str(true)
		if !ok {
			return false, nil
		}
		field, next, err := sh.member(seen, path, name)
		if err != nil {
			return false, err
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false, nil
		}
		s.i++
		return s.walk(next, field)
	})
}

// jsonShape is what an array or object checked against a type may hold.
type jsonShape struct {
	elem   reflect.Type            // an array's elements
	fields map[string]reflect.Type // a struct's fields (nil: any name)
	values reflect.Type            // a map's values
}

// shapeOf is the shape of t, its pointers followed. No type, an interface
// and a type that decodes itself hold anything, unchecked.
func shapeOf(t reflect.Type) jsonShape {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		return jsonShape{}
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return jsonShape{elem: t.Elem()}
	case reflect.Struct:
		return jsonShape{fields: jsonFields(t)}
	case reflect.Map:
		return jsonShape{values: t.Elem()}
	}
	return jsonShape{}
}

// member checks the member name of an object at path, seen holding the
// names before it, and returns its path and the type of its value.
func (sh jsonShape) member(seen map[string]bool, path, name string) (string, reflect.Type, error) {
	field := joinPath(path, name)
	if seen[name] {
		return "", nil, badRequest(wire.CodeInvalidBody, field, fmt.Sprintf("field %q appears twice", field))
	}
	seen[name] = true
	if sh.fields == nil {
		return field, sh.values, nil
	}
	ft, ok := sh.fields[name]
	if !ok {
		return "", nil, unknownField(field, name, sh.fields)
	}
	return field, ft, nil
}

// each reads the members of an array or object (after its opening
// delimiter) up to end, with one call of member per member.
func (s *strictScanner) each(end byte, member func() (bool, error)) (bool, error) {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == end {
		s.i++
		return true, nil
	}
	for {
		if ok, err := member(); err != nil || !ok {
			return false, err
		}
		s.space()
		if s.i >= len(s.b) {
			return false, nil
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case end:
			s.i++
			return true, nil
		default:
			return false, nil
		}
	}
}

// str reads a string; with value, it returns its decoded text.
func (s *strictScanner) str(value bool) (string, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	start := s.i
	escaped := false
	for s.i++; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '\\':
			escaped = true
			s.i++
		case c < 0x20:
			return "", false
		case c == '"':
			s.i++
			if !value {
				return "", true
			}
			if !escaped {
				return string(s.b[start+1 : s.i-1]), true
			}
			var out string
			if err := json.Unmarshal(s.b[start:s.i], &out); err != nil {
				return "", false
			}
			return out, true
		}
	}
	return "", false
}

// scalar reads a number, true, false or null (checked by the decoder).
func (s *strictScanner) scalar() bool {
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E' {
			s.i++
			continue
		}
		break
	}
	return s.i > start
}

// unknownField names a field the body's type does not have, and the field
// it may have meant when only its case differs.
func unknownField(field, name string, fields map[string]reflect.Type) error {
	msg := fmt.Sprintf("unknown field %q", field)
	for known := range fields {
		if strings.EqualFold(known, name) {
			msg += fmt.Sprintf(" (field names are case-sensitive: did you mean %q?)", known)
			break
		}
	}
	return badRequest(wire.CodeInvalidBody, field, msg)
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// fieldCache holds jsonFields of each struct type seen: request bodies
// are few types, read on every acquire and renewal.
var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields maps the JSON names of struct t's fields (embedded structs'
// included) to their types, as encoding/json names them. The map is shared:
// callers must not change it.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	out := make(map[string]reflect.Type)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for n, ft := range jsonFields(et) {
					if _, ok := out[n]; !ok {
						out[n] = ft
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	fieldCache.Store(t, out)
	return out
}
