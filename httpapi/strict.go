package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tenure-io/tenure/client"
)

// checkStrict refuses a request body that encoding/json would accept but
// read other than the sender meant: invalid UTF-8 (replaced silently), a
// field name that matches a field only without regard to case ("Holder"
// for "holder"), and an object that names one field twice (the last one
// wins). It walks raw along t, the type the body decodes into; a value of
// the wrong JSON kind is left to the decoder, which names it.
func checkStrict(raw []byte, t reflect.Type) error {
	if !utf8.Valid(raw) {
		return badRequest(client.CodeInvalidBody, "body", "body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := walkStrict(dec, t, ""); err != nil {
		return err
	}
	return nil
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// walkStrict reads one JSON value from dec, checking objects against t.
// Syntax errors end the walk without an error: the decoder reports them.
func walkStrict(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return nil
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	opaque := t == nil || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType)
	switch delim {
	case '[':
		var elem reflect.Type
		if !opaque && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := walkStrict(dec, elem, path+"[]"); err != nil {
				return err
			}
		}
	case '{':
		var fields map[string]reflect.Type
		var values reflect.Type
		switch {
		case opaque:
		case t.Kind() == reflect.Struct:
			fields = jsonFields(t)
		case t.Kind() == reflect.Map:
			values = t.Elem()
		}
		seen := make(map[string]bool)
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil
			}
			name, _ := tok.(string)
			field := joinPath(path, name)
			if seen[name] {
				return badRequest(client.CodeInvalidBody, field, fmt.Sprintf("field %q appears twice", field))
			}
			seen[name] = true
			next := values
			if fields != nil {
				ft, ok := fields[name]
				if !ok {
					return unknownField(field, name, fields)
				}
				next = ft
			}
			if err := walkStrict(dec, next, field); err != nil {
				return err
			}
		}
	}
	_, _ = dec.Token() // the closing delimiter
	return nil
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
	return badRequest(client.CodeInvalidBody, field, msg)
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
	m := structFields(t)
	fieldCache.Store(t, m)
	return m
}

func structFields(t reflect.Type) map[string]reflect.Type {
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
	return out
}
