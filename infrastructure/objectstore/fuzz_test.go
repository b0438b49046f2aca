package objectstore

import (
	"bytes"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

func FuzzDecodeTree(f *testing.F) {
	for _, tr := range []Tree{nil, sampleTree(), {{Name: "l", Kind: tree.KindSymlink, Mode: 0o777, Target: "t"}}} {
		b, err := EncodeTree(tr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(treeMagic + "\x01\x01\x81\x00\x01a"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := DecodeTree(b)
		if err != nil {
			return
		}
		enc, err := EncodeTree(tr)
		if err != nil {
			t.Fatalf("decoded tree does not encode: %v", err)
		}
		if !bytes.Equal(enc, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, enc)
		}
	})
}

// FuzzDeltaCodec: a delta frame decodes, with its dictionary, to what was encoded; and arbitrary
// bytes as a frame (a damaged record) never panic nor exceed the output bound.
func FuzzDeltaCodec(f *testing.F) {
	base, _ := EncodeTree(sampleTree())
	next := bytes.Replace(base, []byte("a-b"), []byte("a-c"), 1)
	frame, err := encodeWithDict(next, base, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(base, next, frame)
	f.Add([]byte{}, []byte("x"), []byte{0x28, 0xb5, 0x2f, 0xfd})
	f.Fuzz(func(t *testing.T, dict, src, junk []byte) {
		fr, err := encodeWithDict(src, dict, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeWithDict(fr, dict, make([]byte, 0, len(src)))
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("round trip: %v", err)
		}
		if out, err := decodeWithDict(junk, dict, make([]byte, 0, 64)); err == nil && len(out) > 64 {
			t.Fatalf("decoded %d bytes past the bound", len(out))
		}
	})
}
