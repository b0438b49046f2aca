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
