package objectstore

import (
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

const (
	// largeBlob is the size above which a blob is streamed into a pack of its own instead of being
	// read whole, so memory stays bounded whatever the file size.
	largeBlob = 8 << 20
	// wholeRead is the size up to which a read decodes an object in one go (one pread, one DecodeAll)
	// instead of streaming it.
	wholeRead = 1 << 20
	// maxWindow bounds the history a stream decoder may allocate; our encoder uses 8 MiB, and a
	// damaged frame header must not make us allocate gigabytes.
	maxWindow = 32 << 20
	// copyBuf is the read size when streaming a large blob.
	copyBuf = 1 << 20
)

// packTarget is the size at which a pack is closed and a new one started (a variable so tests can
// exercise rollover without writing 64 MiB).
var packTarget int64 = 64 << 20

// SHA-256 already guards every object, so the frames carry no checksum of their own (4 bytes and an
// xxhash pass saved per object).
var sharedCodec = sync.OnceValues(func() (*codec, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
	if err != nil {
		return nil, fmt.Errorf("zstd encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxWindow(maxWindow),
		zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	return &codec{enc: enc, dec: dec}, nil
})

// codec holds the shared EncodeAll/DecodeAll instances; both are safe for concurrent use and keep
// their own internal pools, so small objects never pay for building an encoder.
type codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

// Stream coders are stateful, one per goroutine, so they are pooled. Concurrency 1 keeps them
// synchronous (no goroutines to leak) and their memory to one window.
var (
	streamEncPool sync.Pool
	streamDecPool sync.Pool
	bufPool       sync.Pool
)

func getStreamEncoder(w io.Writer, size int64) (*zstd.Encoder, error) {
	if e, ok := streamEncPool.Get().(*zstd.Encoder); ok {
		e.ResetContentSize(w, size)
		return e, nil
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false),
		zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("zstd stream encoder: %w", err)
	}
	e.ResetContentSize(w, size)
	return e, nil
}

func putStreamEncoder(e *zstd.Encoder) {
	e.Reset(nil)
	streamEncPool.Put(e)
}

func getStreamDecoder(r io.Reader) (*zstd.Decoder, error) {
	if d, ok := streamDecPool.Get().(*zstd.Decoder); ok {
		if err := d.Reset(r); err != nil {
			return nil, fmt.Errorf("zstd stream decoder: %w", err)
		}
		return d, nil
	}
	d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxWindow))
	if err != nil {
		return nil, fmt.Errorf("zstd stream decoder: %w", err)
	}
	return d, nil
}

func putStreamDecoder(d *zstd.Decoder) {
	if d.Reset(nil) == nil {
		streamDecPool.Put(d)
	}
}

// Delta coders carry a raw dictionary (the base's content), set per use with ResetWithOptions, so
// they are pooled per goroutine like the stream coders. A dictionary is only referenced, never
// copied, by the options; the fast encoder rebuilds its match table from it on every use (about
// 20 µs, a 256 KiB copy), which is what a per-base encoder cache would save and not worth its memory.
//
// An encoder's history takes twice its window, which cannot change on reset: encoders are pooled
// per window, the smallest that holds base and content, so that the deltas of directory listings
// and source files, nearly all of them, keep half a megabyte each instead of sixteen.
var (
	dictEncPools [len(dictWindows)]sync.Pool
	dictDecPool  sync.Pool
)

// dictWindows are the encoders' windows, smallest first; the last one bounds a match's distance
// for the largest deltas (a match further back into the dictionary is simply not used).
var dictWindows = [...]int{256 << 10, 2 << 20, 8 << 20}

// dictLevel is the level of the encoders of window class i. The fastest level's match table has
// 32k entries, which a dictionary of megabytes overwrites many times over: it finds a fraction of
// the matches there (a 3 MiB file edited in two places: 330 KB), where the default level's tables
// find them all (3 KB) in the same time.
func dictLevel(class int) zstd.EncoderLevel {
	if class == 0 {
		return zstd.SpeedFastest
	}
	return zstd.SpeedDefault
}

// encodeWithDict appends to dst the zstd frame of src compressed with dict as raw dictionary (id 0,
// so the frame names no dictionary).
//
// It uses the encoder's stream, not EncodeAll: setting a dictionary resets the stream's block
// encoder, which then encodes the frame, while EncodeAll would prepare a second one (a pooled
// block encoder) for the same dictionary, doubling what a small delta costs.
func encodeWithDict(src, dict, dst []byte) ([]byte, error) {
	class := len(dictWindows) - 1
	for i, w := range dictWindows {
		if len(dict)+len(src) <= w {
			class = i
			break
		}
	}
	e, ok := dictEncPools[class].Get().(*zstd.Encoder)
	if !ok {
		var err error
		e, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(dictLevel(class)), zstd.WithEncoderCRC(false),
			zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(dictWindows[class]))
		if err != nil {
			return dst, fmt.Errorf("zstd delta encoder: %w", err)
		}
	}
	out := appendWriter{b: dst}
	if err := e.ResetWithOptions(&out, zstd.WithEncoderDictRaw(0, dict)); err != nil {
		return dst, fmt.Errorf("zstd delta encoder: %w", err)
	}
	_, err := e.Write(src)
	if err == nil {
		err = e.Close()
	}
	// A pooled encoder still references dict and out until its next use: a few idle kilobytes.
	dictEncPools[class].Put(e)
	if err != nil {
		return dst, fmt.Errorf("zstd delta encoder: %w", err)
	}
	return out.b, nil
}

// appendWriter appends what is written to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// decodeWithDict appends to dst (whose spare capacity bounds the output) the content of frame,
// compressed with dict as raw dictionary.
func decodeWithDict(frame, dict, dst []byte) ([]byte, error) {
	d, ok := dictDecPool.Get().(*zstd.Decoder)
	if !ok {
		var err error
		d, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxWindow),
			zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			return dst, fmt.Errorf("zstd delta decoder: %w", err)
		}
	}
	if err := d.ResetWithOptions(nil, zstd.WithDecoderDictRaw(0, dict)); err != nil {
		return dst, fmt.Errorf("zstd delta decoder: %w", err)
	}
	out, err := d.DecodeAll(frame, dst)
	dictDecPool.Put(d)
	return out, err
}

// getBuf returns a pooled buffer of length n. Buffers above largeBlob never enter the pool.
func getBuf(n int) *[]byte {
	if p, ok := bufPool.Get().(*[]byte); ok {
		if cap(*p) >= n {
			*p = (*p)[:n]
			return p
		}
	}
	b := make([]byte, n, max(n, 64<<10)) // a floor, so the pool settles instead of churning
	return &b
}

func putBuf(p *[]byte) {
	if cap(*p) <= 2*largeBlob {
		bufPool.Put(p)
	}
}

// decodeSlack is spare capacity given to a whole object's output buffer: with 16 bytes past the
// content (the zstd decoder's compressedBlockOverAlloc), the decoder copies matches in 16-byte
// blocks instead of byte-exact ones, about twice as fast on compressible content.
const decodeSlack = 64
