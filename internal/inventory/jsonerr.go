package inventory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode"
)

// jsonError says where in b a JSON decoding error is (line and column, counted from 1,
// as an editor shows them) and, for a value of the wrong kind, which field and what it
// takes, in the file's own names rather than Go's.
func jsonError(b []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("line %s: %v", position(b, syn.Offset), syn)
	case errors.As(err, &typ):
		field := jsonPath(typ.Field)
		if field == "" {
			field = "the document"
		}
		return fmt.Errorf("line %s: %s is a JSON %s; want %s", position(b, typ.Offset), field, typ.Value, kindWord(typ.Type))
	}
	return err
}

// position is "LINE, column COL" of byte offset off in b. A SyntaxError's offset is
// just past the byte that broke the parse, a type error's just past the value.
func position(b []byte, off int64) string {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	if off > 0 {
		off-- // the byte at fault, not the one after it
	}
	before := b[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("%d, column %d", line, col)
}

// kindWord names what a JSON value of Go type t is written as.
func kindWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list [...]"
	}
	return "an object {...}"
}

// jsonPath is a type error's field path as the file spells it: without the Go names of
// embedded structs (Cluster.nodes.gpus -> nodes.gpus), which no JSON key has.
func jsonPath(field string) string {
	var keep []string
	for _, part := range strings.Split(field, ".") {
		if part != "" && !unicode.IsUpper(rune(part[0])) {
			keep = append(keep, part)
		}
	}
	return strings.Join(keep, ".")
}
