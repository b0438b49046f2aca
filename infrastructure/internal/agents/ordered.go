package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// object is a JSON object that keeps its keys in the order they were read.
type object struct {
	keys []string
	vals map[string]any
}

func newObject() *object { return &object{vals: map[string]any{}} }

func (o *object) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) del(k string) {
	delete(o.vals, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			return
		}
	}
}

// asObject is v as an object, nil when it is not one (shapes are checked on load).
func asObject(v any) *object {
	o, _ := v.(*object)
	return o
}

// parse reads one JSON value: objects as *object, arrays as []any, numbers as json.Number.
func parse(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}

// maxDepth bounds the nesting of a settings file: a hostile one cannot exhaust the stack.
const maxDepth = 200

func readValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return readObject(dec, depth+1)
		}
		return readArray(dec, depth+1) // '[': the decoder never hands a closing delimiter here
	default:
		return t, nil
	}
}

func readObject(dec *json.Decoder, depth int) (*object, error) {
	o := newObject()
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := tok.(string) // the decoder only yields strings as object keys
		if _, dup := o.vals[k]; dup {
			return nil, fmt.Errorf("duplicate key %q", k)
		}
		v, err := readValue(dec, depth)
		if err != nil {
			return nil, err
		}
		o.set(k, v)
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, err
	}
	return o, nil
}

func readArray(dec *json.Decoder, depth int) ([]any, error) {
	a := []any{}
	for dec.More() {
		v, err := readValue(dec, depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, err
	}
	return a, nil
}

// render prints v indented by two spaces, with a final newline.
func render(v any) []byte {
	var b strings.Builder
	write(&b, v, "")
	b.WriteByte('\n')
	return []byte(b.String())
}

func write(b *strings.Builder, v any, indent string) {
	switch t := v.(type) {
	case *object:
		if len(t.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range t.keys {
			b.WriteString(indent + "  ")
			b.Write(scalar(k))
			b.WriteString(": ")
			write(b, t.vals[k], indent+"  ")
			if i < len(t.keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "}")
	case []any:
		if len(t) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, e := range t {
			b.WriteString(indent + "  ")
			write(b, e, indent+"  ")
			if i < len(t)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	case json.Number:
		b.WriteString(string(t))
	default:
		b.Write(scalar(t))
	}
}

// scalar encodes a string, bool or nil as JSON, without escaping <, > and &.
func scalar(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings, bools and nil always encode
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
