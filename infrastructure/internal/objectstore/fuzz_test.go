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

// FuzzDecodeIdx: an idx of any version either is refused or decodes to entries that encode back
// to the very same bytes (one encoding per content), and damage never panics.
func FuzzDecodeIdx(f *testing.F) {
	e := []idxEntry{
		{hash: tree.Hash{1}, kind: BlobObject, offset: 12, comp: 5, raw: 5},
		{hash: tree.Hash{2}, kind: BlobDeltaObject, offset: 70, comp: 40, raw: 500, base: tree.Hash{7}},
		{hash: tree.Hash{3}, kind: TreeDeltaObject, offset: 200, comp: 40, raw: 500, base: tree.Hash{8}},
	}
	f.Add(encodeIdx(e, 3))
	f.Add(encodeIdx([]idxEntry{e[0], e[2]}, 2))
	f.Add(encodeIdx(e[:1], 1))
	f.Add(encodeIdx(nil, 3))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, v, err := decodeIdx(b)
		if err != nil {
			return
		}
		if out := encodeIdx(entries, v); !bytes.Equal(out, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, out)
		}
	})
}

// FuzzScanPack: scanning arbitrary bytes as a pack (a damaged one, or one without its idx) never
// panics, and what it accepts lies inside the pack, each record after the one before.
func FuzzScanPack(f *testing.F) {
	pack := packHeader()
	for i, rec := range []struct {
		kind Kind
		data []byte
	}{{BlobObject, []byte("zstd-ish")}, {BlobDeltaObject, appendDeltaPrefix(nil, tree.Hash{5}, 1)}} {
		hdr := appendRecordHeader(nil, rec.kind, tree.Hash{byte(i + 1)}, 100, int64(len(rec.data)))
		pack = append(pack, hdr...)
		pack = append(pack, rec.data...)
		pack = appendTrailer(pack, hdr, crc(rec.data))
	}
	f.Add(pack)
	f.Add(pack[:len(pack)-3])
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, _, err := scanRecords(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		end := int64(packHeaderLen)
		for _, e := range entries {
			if e.offset < end || e.offset+e.comp > int64(len(b)) || !e.kind.valid() {
				t.Fatalf("record %+v outside the pack or overlapping the one before", e)
			}
			if !e.kind.delta() && !e.base.IsZero() {
				t.Fatalf("a base for a record that is no delta: %+v", e)
			}
			end = e.offset + 1
		}
	})
}
