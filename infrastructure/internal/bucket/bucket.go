// Package bucket is the S3 adapter of the object store's Backend port: a shared store in a bucket
// of any S3-compatible service (AWS S3, MinIO, ...), reached with minio-go, behind a local cache.
//
// A store URL is s3://bucket[/prefix]. The endpoint and credentials come only from the standard
// AWS environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
// AWS_REGION), never from a flag or a file, so a workspace's configuration holds no secret. Reads
// and PUTs of new names are retried with backoff (they are idempotent); nothing else is.
//
// Its two invariants:
//   - a file appears whole or not at all (one PUT; Create is a conditional PUT that never
//     replaces), and nothing is read-modify-written in place, so many writers need no lock;
//   - the local cache holds only copies of immutable files and is not the store: deleting it loses
//     nothing, and damage found in a copy is read again from the bucket before it counts.
//
// The rest (deadlines, and which failure is which fault kind) is in docs/design.md.
//
// Invariants: docs/design.md#bucket; the files it holds: docs/format.md#object-store-layout.
package bucket

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/secret"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// Config says which bucket to open and where to cache it.
type Config struct {
	// URL is s3://bucket[/prefix].
	URL string
	// CacheDir is the local cache (and the store's work directory, where packs are written
	// before they are uploaded).
	CacheDir string
	// CacheMax bounds the packs the cache keeps; 0 means DefaultCacheMax.
	CacheMax int64
	// Create makes the bucket when it is missing (plan init); otherwise a missing bucket is
	// fault.ErrNotFound.
	Create bool
	// Getenv reads the AWS environment (the composition root passes the process's); nil reads none.
	Getenv func(string) string
	// Timeout bounds one request (a whole upload of a large pack included); 0 means 10 minutes.
	Timeout time.Duration
	// Stall bounds how long a connection may carry nothing, neither way, while a request uses it
	// (a frozen server, a silent partition); 0 means DefaultStall.
	Stall time.Duration
	// Retries is how often a failed request that is safe to repeat is tried again, with
	// exponential backoff (minio-go's); 0 means DefaultRetries.
	Retries int
}

// DefaultRetries is how often a failed request is retried: a few seconds of backoff in all, enough
// for a server restart, short enough that an outage is reported promptly.
const DefaultRetries = 4

// DefaultStall is how long a request may wait on a connection that moves no byte: far longer than
// any healthy server is silent, far shorter than the request's own Timeout.
const DefaultStall = time.Minute

// DefaultCacheMax is the default bound of the pack cache.
const DefaultCacheMax = 2 << 30

// Backend is a bucket as an objectstore.Backend.
type Backend struct {
	client   *minio.Client
	bucket   string
	prefix   string // "" or "some/prefix/"
	url      string
	endpoint string
	timeout  time.Duration
	cache    *cache

	clockOnce sync.Once
	skew      time.Duration // server minus local clock, measured once
	clockErr  error
}

var _ objectstore.Backend = (*Backend)(nil)

// ParseURL splits s3://bucket[/prefix] into the bucket and the prefix (without slashes at either
// end). A bucket name S3 does not accept is invalid input.
func ParseURL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fault.Invalid("store URL %q: want s3://bucket[/prefix]", raw)
	}
	// minio-go checks the name before every request, and its complaint carries no status: left to
	// it, a name S3 never accepts would read as a service that does not answer. Its lenient check
	// lets upper case and underscores through, which S3 answers with a bare 400: the strict one.
	if err := s3utils.CheckValidBucketNameStrict(u.Host); err != nil {
		return "", "", fault.Invalid("store URL %q: %v", raw, err)
	}
	prefix = strings.Trim(u.Path, "/")
	if strings.Contains(prefix, "//") || strings.Contains("/"+prefix+"/", "/../") || strings.Contains("/"+prefix+"/", "/./") {
		return "", "", fault.Invalid("store URL %q: the prefix is not a clean path", raw)
	}
	return u.Host, prefix, nil
}

// Open connects to the bucket the URL names and checks it is there (creating it with Create).
func Open(ctx context.Context, cfg Config) (*Backend, error) {
	bucketName, prefix, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	endpoint, secure, err := endpointOf(getenv("AWS_ENDPOINT_URL"))
	if err != nil {
		return nil, err
	}
	region := getenv("AWS_REGION")
	if region == "" {
		region = getenv("AWS_DEFAULT_REGION")
	}
	id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" || secret == "" {
		return nil, fault.Unavailable("store %s: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_ENDPOINT_URL for a service other than AWS)", cfg.URL)
	}
	client, err := minio.New(endpoint, &minio.Options{
		Creds:      credentials.NewStaticV4(id, secret, getenv("AWS_SESSION_TOKEN")),
		Secure:     secure,
		Region:     region,
		MaxRetries: cmp.Or(cfg.Retries, DefaultRetries),
		Transport:  transport(cmp.Or(cfg.Stall, DefaultStall)),
	})
	if err != nil {
		return nil, fault.Invalid("store %s: endpoint %s: %v", cfg.URL, endpoint, err)
	}
	b := &Backend{
		client: client, bucket: bucketName, url: strings.TrimSuffix(cfg.URL, "/"), endpoint: endpoint,
		timeout: cfg.Timeout,
	}
	if prefix != "" {
		b.prefix = prefix + "/"
	}
	if b.timeout <= 0 {
		b.timeout = 10 * time.Minute
	}
	if b.cache, err = openCache(cfg.CacheDir, cfg.CacheMax); err != nil {
		return nil, err
	}
	if err := b.ensureBucket(ctx, cfg.Create, region); err != nil {
		return nil, err
	}
	return b, nil
}

// transport is the default transport with connection timeouts short enough that a server that is
// down is reported as such in seconds, not minutes, and connections that give up after stall
// without a byte either way. An idle connection is closed (after stall/2) before its silence
// could count against it.
func transport(stall time.Duration) http.RoundTripper {
	t := &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, MaxIdleConns: 100,
		IdleConnTimeout: min(90*time.Second, stall/2), TLSHandshakeTimeout: 10 * time.Second, ExpectContinueTimeout: time.Second}
	dial := (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &stallConn{Conn: c, stall: stall}, nil
	}
	t.ResponseHeaderTimeout = 2 * time.Minute
	t.MaxIdleConnsPerHost = 16
	return t
}

// stallConn is a connection on which every read and write gives the connection stall more to move
// a byte: one that moves nothing for that long, either way, fails with a timeout.
type stallConn struct {
	net.Conn
	stall time.Duration
}

func (c *stallConn) Read(p []byte) (int, error) {
	_ = c.SetDeadline(time.Now().Add(c.stall)) // #nosec G104 -- a closed connection fails the read itself
	return c.Conn.Read(p)
}

func (c *stallConn) Write(p []byte) (int, error) {
	_ = c.SetDeadline(time.Now().Add(c.stall)) // #nosec G104 -- a closed connection fails the write itself
	return c.Conn.Write(p)
}

// endpointOf turns AWS_ENDPOINT_URL into minio-go's host[:port] and TLS flag; empty means AWS.
func endpointOf(raw string) (string, bool, error) {
	if raw == "" {
		return "s3.amazonaws.com", true, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil {
		// Shown without what it holds of credentials: they belong in AWS_ACCESS_KEY_ID and
		// AWS_SECRET_ACCESS_KEY, never in the URL.
		shown, _ := secret.URL(raw)
		return "", false, fault.Invalid("AWS_ENDPOINT_URL %q: want http(s)://host[:port] (credentials go in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)", shown)
	}
	return u.Host, u.Scheme == "https", nil
}

func (b *Backend) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), b.timeout)
}

// ensureBucket checks the bucket is there by listing (at most one key of) the store's own prefix,
// which is all a least-privilege policy grants (ListBucket with an s3:prefix condition): no call
// on the whole bucket (HeadBucket, ListBuckets) is made unless it must be created.
func (b *Backend) ensureBucket(ctx context.Context, create bool, region string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := b.probe(ctx)
	if err == nil {
		return nil
	}
	if minio.ToErrorResponse(err).Code != "NoSuchBucket" {
		return b.classify("open the bucket", "", err)
	}
	if !create {
		return fault.NotFound("store %s: the bucket %s does not exist (plan init --store creates it)", b.url, b.bucket)
	}
	if err := b.client.MakeBucket(ctx, b.bucket, minio.MakeBucketOptions{Region: region}); err != nil {
		if resp := minio.ToErrorResponse(err); resp.Code == "BucketAlreadyOwnedByYou" || resp.Code == "BucketAlreadyExists" {
			return nil // made by another workspace meanwhile
		}
		return b.classify("create the bucket", "", err)
	}
	return nil
}

// probe lists the first key under the store's prefix: nil when the listing works (the bucket is
// there and the credentials may read the prefix).
func (b *Backend) probe(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing after its first answer
	for obj := range b.client.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: b.prefix, MaxKeys: 1}) {
		return obj.Err
	}
	return nil
}

func (b *Backend) key(name string) string { return b.prefix + name }

// classify turns a minio-go error (never nil) into the kinds callers act on: a missing key is
// fs.ErrNotExist; a refused conditional write fs.ErrExist; a range past the end
// fault.ErrIntegrity; anything that says the service cannot be used (network, credentials, server
// errors after retries) fault.ErrUnavailable.
func (b *Backend) classify(op, name string, err error) error {
	what := b.url
	if name != "" {
		what = b.Location(name)
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == "NoSuchKey" || resp.StatusCode == http.StatusNotFound && resp.Code != "NoSuchBucket":
		return fmt.Errorf("%s %s: %w", op, what, fs.ErrNotExist)
	case resp.Code == "PreconditionFailed" || resp.StatusCode == http.StatusPreconditionFailed:
		return fmt.Errorf("%s %s: %w", op, what, fs.ErrExist)
	case resp.Code == "NoSuchBucket":
		return fault.NotFound("%s %s: the bucket %s does not exist", op, what, b.bucket)
	case resp.Code == "InvalidRange" || resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		// Only ranges within the size the file had when it was opened are asked for.
		return fault.Integrity("%s %s: shorter than when it was opened (the file changed?)", op, what)
	case resp.Code == "AccessDenied" || resp.Code == "InvalidAccessKeyId" || resp.Code == "SignatureDoesNotMatch" ||
		resp.StatusCode == http.StatusForbidden:
		return fault.Denied("%s %s: refused (%s): the credentials in the AWS environment are not accepted, or their policy does not allow this", op, what, resp.Code)
	case resp.StatusCode >= 500 || resp.StatusCode == 0 || errors.Is(err, context.DeadlineExceeded):
		return fault.Unavailable("%s %s: %s does not answer: %v", op, what, b.endpoint, err)
	}
	return fmt.Errorf("%s %s: %w", op, what, err)
}

// List implements objectstore.Backend.
func (b *Backend) List(dir string) ([]objectstore.FileInfo, error) {
	ctx, cancel := b.ctx()
	defer cancel()
	p := b.prefix
	if dir != "" {
		p += strings.TrimSuffix(dir, "/") + "/"
	}
	var out []objectstore.FileInfo
	for obj := range b.client.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: p}) {
		if obj.Err != nil {
			return nil, b.classify("list", dir, obj.Err)
		}
		name := strings.TrimPrefix(obj.Key, p)
		if d, ok := strings.CutSuffix(name, "/"); ok {
			out = append(out, objectstore.FileInfo{Name: d, Dir: true})
			continue
		}
		out = append(out, objectstore.FileInfo{Name: name, Size: obj.Size, ModTime: obj.LastModified})
	}
	if dir == "packs" {
		b.cache.forgetAbsent("packs", out)
	}
	return out, nil
}

// ListTree implements objectstore.TreeLister: one request per thousand names, whatever the depth,
// each with its ETag.
func (b *Backend) ListTree(dir string) ([]objectstore.FileInfo, error) {
	ctx, cancel := b.ctx()
	defer cancel()
	p := b.prefix + strings.TrimSuffix(dir, "/") + "/"
	var out []objectstore.FileInfo
	for obj := range b.client.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: p, Recursive: true}) {
		if obj.Err != nil {
			return nil, b.classify("list", dir, obj.Err)
		}
		out = append(out, objectstore.FileInfo{Name: strings.TrimPrefix(obj.Key, p), Size: obj.Size,
			ModTime: obj.LastModified, Tag: strings.Trim(obj.ETag, `"`)})
	}
	return out, nil
}

// immutable says which names the cache may keep: everything the object store writes to a shared
// store except pending records, which are deleted soon after they are written.
func immutable(name string) bool {
	return !strings.Contains(name, "/pending/")
}

// ReadFile implements objectstore.Backend.
func (b *Backend) ReadFile(name string) ([]byte, error) {
	if immutable(name) {
		if data, ok := b.cache.read(name); ok {
			return data, nil
		}
	}
	ctx, cancel := b.ctx()
	defer cancel()
	obj, err := b.client.GetObject(ctx, b.bucket, b.key(name), minio.GetObjectOptions{})
	if err != nil {
		return nil, b.classify("read", name, err)
	}
	defer func() { _ = obj.Close() }()
	data, err := io.ReadAll(obj)
	if err != nil {
		return nil, b.classify("read", name, err)
	}
	b.cache.misses.Add(1)
	b.cache.downloaded.Add(int64(len(data)))
	if immutable(name) {
		b.cache.write(name, data)
	}
	return data, nil
}

// Open implements objectstore.Backend: a cached copy when there is one, else a reader that fetches
// the ranges asked for and, once a good part of the file has been asked for, the whole file into
// the cache.
func (b *Backend) Open(name string) (objectstore.File, error) {
	if f, ok := b.cache.open(name); ok {
		return f, nil
	}
	ctx, cancel := b.ctx()
	defer cancel()
	info, err := b.client.StatObject(ctx, b.bucket, b.key(name), minio.StatObjectOptions{})
	if err != nil {
		return nil, b.classify("open", name, err)
	}
	b.cache.misses.Add(1)
	rf := &remoteFile{b: b, name: name, size: info.Size, blocks: map[int64][]byte{}}
	if info.Size <= wholeFetch {
		if err := rf.promote(); err != nil {
			return nil, err
		}
	}
	return rf, nil
}

// Install implements objectstore.Backend: one upload (multipart for large files, which S3 makes
// visible only once complete), then src becomes the cache's copy.
func (b *Backend) Install(src, name string) error {
	ctx, cancel := b.ctx()
	defer cancel()
	_, err := b.client.FPutObject(ctx, b.bucket, b.key(name), src, minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return b.classify("upload", name, err)
	}
	b.cache.adopt(src, name)
	return nil
}

// WriteFile implements objectstore.Backend.
func (b *Backend) WriteFile(name string, data []byte, _ fs.FileMode) error {
	return b.put(name, data, false)
}

// Create implements objectstore.Backend with a conditional PUT.
func (b *Backend) Create(name string, data []byte, _ fs.FileMode) error {
	return b.put(name, data, true)
}

func (b *Backend) put(name string, data []byte, create bool) error {
	ctx, cancel := b.ctx()
	defer cancel()
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
	if create {
		opts.SetMatchETagExcept("*")
	}
	_, err := b.client.PutObject(ctx, b.bucket, b.key(name), bytes.NewReader(data), int64(len(data)), opts)
	if err != nil {
		return b.classify("write", name, err)
	}
	if immutable(name) {
		b.cache.write(name, data)
	}
	return nil
}

// Rename implements objectstore.Backend: a server-side copy (to appears whole), then the delete.
func (b *Backend) Rename(from, to string) error {
	ctx, cancel := b.ctx()
	defer cancel()
	_, err := b.client.CopyObject(ctx,
		minio.CopyDestOptions{Bucket: b.bucket, Object: b.key(to)},
		minio.CopySrcOptions{Bucket: b.bucket, Object: b.key(from)})
	if err != nil {
		return b.classify("rename", from, err)
	}
	return b.Remove(from)
}

// Remove implements objectstore.Backend.
func (b *Backend) Remove(name string) error {
	ctx, cancel := b.ctx()
	defer cancel()
	if err := b.client.RemoveObject(ctx, b.bucket, b.key(name), minio.RemoveObjectOptions{}); err != nil {
		if errors.Is(b.classify("remove", name, err), fs.ErrNotExist) {
			return nil
		}
		return b.classify("remove", name, err)
	}
	b.cache.drop(name)
	return nil
}

// Sync implements objectstore.Backend: every request is durable when it returns.
func (b *Backend) Sync(string) error { return nil }

// Location implements objectstore.Backend.
func (b *Backend) Location(name string) string {
	if name == "" {
		return b.url
	}
	return b.url + "/" + name
}

// Shared implements objectstore.Backend.
func (b *Backend) Shared() bool { return true }

// LocalRoot implements objectstore.Backend.
func (b *Backend) LocalRoot() (string, bool) { return "", false }

// Now implements objectstore.Backend: the server's clock, measured once by writing a probe and
// reading back its modification time, then followed with the local monotonic clock.
func (b *Backend) Now() (time.Time, error) {
	b.clockOnce.Do(func() {
		probe := fmt.Sprintf("clock/%d-%d", os.Getpid(), time.Now().UnixNano())
		before := time.Now()
		if b.clockErr = b.put(probe, []byte("clock probe\n"), false); b.clockErr != nil {
			return
		}
		ctx, cancel := b.ctx()
		defer cancel()
		info, err := b.client.StatObject(ctx, b.bucket, b.key(probe), minio.StatObjectOptions{})
		if err != nil {
			b.clockErr = b.classify("read the clock probe", probe, err)
			return
		}
		// LastModified has a second's resolution: take the middle of the round trip.
		mid := before.Add(time.Since(before) / 2)
		b.skew = info.LastModified.Add(500 * time.Millisecond).Sub(mid)
		b.clockErr = b.Remove(probe)
	})
	return time.Now().Add(b.skew), b.clockErr
}

// CacheStats are the cache's counters since it was created.
type CacheStats struct {
	Hits, Misses     int64 // files served from the cache, and fetched from the bucket
	DownloadedBytes  int64
	CachedBytes      int64 // what the cache holds now
	CacheLimit       int64
	UploadedToCached int64 // files the cache keeps because this machine uploaded them
}

// Stats returns the cache's counters (kept across processes in the cache directory).
func (b *Backend) Stats() CacheStats { return b.cache.stats() }

// Close saves the cache's counters.
func (b *Backend) Close() error { return b.cache.close() }

// wholeFetch is the size up to which a pack is fetched whole when opened; larger ones are read
// by range until promoteAfter blocks of them were fetched.
const (
	wholeFetch   = 4 << 20
	blockSize    = 1 << 20
	promoteAfter = 8
)

// remoteFile reads a file of the bucket by range, in blocks it keeps, until enough of it has been
// asked for to fetch it whole into the cache.
type remoteFile struct {
	b    *Backend
	name string
	size int64

	mu      sync.Mutex
	blocks  map[int64][]byte
	fetched int
	local   objectstore.File
}

func (f *remoteFile) Size() int64 { return f.size }

func (f *remoteFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blocks = nil
	if f.local != nil {
		return f.local.Close()
	}
	return nil
}

func (f *remoteFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset", f.name)
	}
	f.mu.Lock()
	local := f.local
	f.mu.Unlock()
	if local != nil {
		return local.ReadAt(p, off)
	}
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= f.size {
			return n, io.EOF
		}
		blk, err := f.block(at / blockSize)
		if err != nil {
			return n, err
		}
		if blk == nil { // promoted meanwhile
			f.mu.Lock()
			local = f.local
			f.mu.Unlock()
			m, err := local.ReadAt(p[n:], at)
			return n + m, err
		}
		n += copy(p[n:], blk[at%blockSize:])
	}
	return n, nil
}

// block returns block i, fetching it; nil when the file was fetched whole instead.
func (f *remoteFile) block(i int64) ([]byte, error) {
	f.mu.Lock()
	if blk, ok := f.blocks[i]; ok {
		f.mu.Unlock()
		f.b.cache.hits.Add(1)
		return blk, nil
	}
	f.fetched++
	promote := f.fetched > promoteAfter
	f.mu.Unlock()
	if promote {
		return nil, f.promote()
	}
	start := i * blockSize
	end := min(start+blockSize, f.size) - 1
	ctx, cancel := f.b.ctx()
	defer cancel()
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(start, end); err != nil {
		return nil, err
	}
	obj, err := f.b.client.GetObject(ctx, f.b.bucket, f.b.key(f.name), opts)
	if err != nil {
		return nil, f.b.classify("read", f.name, err)
	}
	defer func() { _ = obj.Close() }()
	blk, err := io.ReadAll(obj)
	if err != nil {
		return nil, f.b.classify("read", f.name, err)
	}
	if int64(len(blk)) != end-start+1 {
		return nil, f.b.short(f.name, f.size, fmt.Sprintf("%d bytes at %d, want %d", len(blk), start, end-start+1))
	}
	f.b.cache.downloaded.Add(int64(len(blk)))
	f.mu.Lock()
	if f.blocks != nil {
		f.blocks[i] = blk
	}
	f.mu.Unlock()
	return blk, nil
}

// short is the error of a read of name (of size bytes when opened or listed) that returned another
// number of bytes (what says how many): the file changed (fault.ErrIntegrity) when the bucket now
// lists another size, else a body cut short on the way (fault.ErrUnavailable), which says nothing
// about the stored bytes.
func (b *Backend) short(name string, size int64, what string) error {
	ctx, cancel := b.ctx()
	defer cancel()
	info, err := b.client.StatObject(ctx, b.bucket, b.key(name), minio.StatObjectOptions{})
	switch {
	case err != nil:
		return b.classify("read", name, err)
	case info.Size != size:
		return fault.Integrity("read %s: %s: its size is now %d, not %d (the file changed)", b.Location(name), what, info.Size, size)
	}
	return fault.Unavailable("read %s: %s: the download was cut short", b.Location(name), what)
}

// promote fetches the whole file into the cache and reads it from there from now on.
func (f *remoteFile) promote() error {
	local, err := f.b.cache.fetch(f.b, f.name, f.size)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.local != nil {
		_ = local.Close()
		return nil
	}
	f.local, f.blocks = local, nil
	return nil
}

// cache is the local copy of immutable files, under dir/files/<name>.
type cache struct {
	dir, files, tmp string
	max             int64

	hits, misses, downloaded, adopted atomic.Int64
	base                              CacheStats // counters of earlier processes

	evictMu sync.Mutex
}

func openCache(dir string, limit int64) (*cache, error) {
	if dir == "" {
		return nil, errors.New("bucket: no cache directory")
	}
	if limit <= 0 {
		limit = DefaultCacheMax
	}
	c := &cache{dir: dir, files: filepath.Join(dir, "files"), tmp: filepath.Join(dir, "tmp"), max: limit}
	for _, d := range []string{c.files, c.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("create the store cache: %w", err)
		}
	}
	c.loadStats()
	return c, nil
}

func (c *cache) path(name string) string {
	return filepath.Join(c.files, filepath.FromSlash(path.Clean(name)))
}

func (c *cache) read(name string) ([]byte, bool) {
	data, err := os.ReadFile(c.path(name))
	if err != nil || len(data) == 0 {
		return nil, false
	}
	c.hits.Add(1)
	return data, true
}

// write keeps data as name's copy (atomically: a reader never sees a torn copy).
func (c *cache) write(name string, data []byte) {
	p := c.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return
	}
	f, err := os.CreateTemp(c.tmp, "cache-*")
	if err != nil {
		return
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
}

// open returns the cached copy of name, marking it used.
func (c *cache) open(name string) (objectstore.File, bool) {
	p := c.path(name)
	f, err := objectstore.NewDir(c.files, false).Open(name)
	if err != nil {
		return nil, false
	}
	used(p)
	c.hits.Add(1)
	return f, true
}

// used stamps a cached file as used now. Eviction orders packs by these stamps, so every use
// (opened, uploaded, downloaded) is stamped with the same clock: the kernel's coarser one, which a
// file's own write leaves, may lag behind it, and would make a pack just uploaded look older than
// one opened a moment before.
func used(p string) {
	now := time.Now()
	_ = os.Chtimes(p, now, now)
}

// adopt makes the uploaded file src the cached copy of name.
func (c *cache) adopt(src, name string) {
	p := c.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		_ = os.Remove(src)
		return
	}
	used(src)
	if err := os.Rename(src, p); err != nil {
		_ = os.Remove(src)
		return
	}
	c.adopted.Add(1)
	c.evict()
}

// fetch downloads name whole into the cache and opens the copy. The copy is opened before it is
// put in place: from then on an eviction (by another fetch, or by this one when the file alone
// exceeds the bound) may remove it, and the reader must still have it, or a pack that is there would
// read as missing, which is damage.
func (c *cache) fetch(b *Backend, name string, size int64) (objectstore.File, error) {
	ctx, cancel := b.ctx()
	defer cancel()
	f, err := os.CreateTemp(c.tmp, "fetch-*")
	if err != nil {
		return nil, fmt.Errorf("cache %s: %w", b.Location(name), err)
	}
	tmp := f.Name()
	_ = f.Close()
	if err := b.client.FGetObject(ctx, b.bucket, b.key(name), tmp, minio.GetObjectOptions{}); err != nil {
		_ = os.Remove(tmp)
		return nil, b.classify("read", name, err)
	}
	local, err := objectstore.NewDir(c.tmp, false).Open(filepath.Base(tmp))
	if err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("cache %s: %w", b.Location(name), err)
	}
	if local.Size() != size {
		_ = local.Close()
		_ = os.Remove(tmp)
		return nil, b.short(name, size, fmt.Sprintf("%d bytes downloaded, want %d", local.Size(), size))
	}
	c.downloaded.Add(size)
	p := c.path(name)
	used(tmp)
	err = os.MkdirAll(filepath.Dir(p), 0o700)
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		// Read from the download all the same: only the cache's copy is lost.
		_ = os.Remove(tmp)
		return local, nil
	}
	c.evict()
	return local, nil
}

func (c *cache) drop(name string) { _ = os.Remove(c.path(name)) }

// DropLocal implements the object store's local-copies capability: it removes the cached copy of
// name (one found damaged, or bypassed by `verify --read-data`), so that the next read fetches the
// bucket's own bytes, and says whether there was one.
func (b *Backend) DropLocal(name string) bool {
	err := os.Remove(b.cache.path(name))
	return err == nil
}

// forgetAbsent removes cached files of dir that the bucket no longer lists (a gc swept them).
func (c *cache) forgetAbsent(dir string, listed []objectstore.FileInfo) {
	have := make(map[string]bool, len(listed))
	for _, fi := range listed {
		have[fi.Name] = true
	}
	des, err := os.ReadDir(filepath.Join(c.files, dir))
	if err != nil {
		return
	}
	for _, de := range des {
		if !have[de.Name()] {
			_ = os.Remove(filepath.Join(c.files, dir, de.Name()))
		}
	}
}

// evict removes the least recently used packs while the cache holds more than its bound.
func (c *cache) evict() {
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	des, err := os.ReadDir(filepath.Join(c.files, "packs"))
	if err != nil {
		return
	}
	type entry struct {
		name string
		size int64
		used time.Time
	}
	var packs []entry
	var total int64
	for _, de := range des {
		fi, err := de.Info()
		if err != nil || !strings.HasSuffix(de.Name(), ".pack") {
			continue
		}
		packs = append(packs, entry{de.Name(), fi.Size(), fi.ModTime()})
		total += fi.Size()
	}
	if total <= c.max {
		return
	}
	for i := 1; i < len(packs); i++ { // oldest first
		for j := i; j > 0 && packs[j].used.Before(packs[j-1].used); j-- {
			packs[j], packs[j-1] = packs[j-1], packs[j]
		}
	}
	for _, p := range packs {
		if total <= c.max {
			break
		}
		if os.Remove(filepath.Join(c.files, "packs", p.name)) == nil {
			total -= p.size
		}
	}
}

func (c *cache) cachedBytes() int64 {
	var total int64
	_ = filepath.WalkDir(c.files, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	return total
}
