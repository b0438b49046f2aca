// Package config reads and writes a workspace's .plan/config.yaml: its identity (workspace_id),
// where its content and metadata live (store, db), and its policies (retention, gc, cache,
// record_nested_git). Every adapter that needs a setting reads it from File, so the file has one
// schema.
//
// Invariants:
//   - unknown keys are refused (fault.ErrInvalid naming the file), so a typo never silently
//     changes nothing;
//   - a number is what is written: an integer setting written as anything but a whole number
//     (keep: 2.9, 1e3) is refused naming the key and the file, never truncated;
//   - the file never holds a secret: Save refuses a db DSN with a credential in any form (a
//     password in its userinfo, a password=, passfile= or sslpassword= parameter; the caller
//     strips them with RedactDSN first); S3 credentials never enter it at all;
//   - Save replaces the file atomically and durably: a crash leaves the old file or the new one;
//   - a file another user owns or may write is never read (Load refuses it: it names a command).
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/secret"
	"github.com/planhq/plan/infrastructure/internal/fsx"
)

// FileName is the configuration's name inside .plan/.
const FileName = "config.yaml"

// File is the whole configuration. Fields are raw (durations as written); the adapters that use
// them interpret and validate their part.
type File struct {
	// WorkspaceID is the workspace's stable identity, set by plan init (or clone). Workspaces made
	// before it existed have none here; their database holds it.
	WorkspaceID string `yaml:"workspace_id,omitempty"`
	// Store is where content lives: "" (the private store under .plan/objects), file:///abs/path
	// or s3://bucket[/prefix] (shared stores). In the file, `store: URL`; with a disk budget,
	// `store: {url: URL, max_bytes: SIZE, workspace_max_bytes: SIZE}` (see Budget).
	Store string `yaml:"store,omitempty"`
	// StateDir is the workspace's state directory outside it (absolute: in the per-user data
	// directory, see registry), or "" for a workspace whose state is in .plan/ itself (made
	// before wave 4, or with `plan init --store workspace`).
	StateDir string `yaml:"state_dir,omitempty"`
	// DB is the metadata database: "" (.plan/plan.db), sqlite:///abs/path or postgres://... without
	// a credential (the password comes from PGPASSWORD, PGPASSFILE or ~/.pgpass).
	DB string `yaml:"db,omitempty"`

	Retention *Retention `yaml:"retention,omitempty"`
	GC        *GC        `yaml:"gc,omitempty"`
	Cache     *Cache     `yaml:"cache,omitempty"`
	// Budget is written under store (store.max_bytes, store.workspace_max_bytes), as the
	// contract names it; Load and Save move it there and back.
	Budget          *Budget   `yaml:"-"`
	RecordNestedGit *bool     `yaml:"record_nested_git,omitempty"`
	Hooks           *Hooks    `yaml:"hooks,omitempty"`
	Validate        *Validate `yaml:"validate,omitempty"`
}

// Hooks configures `plan hook`, the agents' hooks (docs/agents.md).
type Hooks struct {
	// FailClosed blocks an agent's tool call when plan could not checkpoint before it; by default
	// (false) plan warns and lets the tool run.
	FailClosed *bool `yaml:"fail_closed,omitempty"`
	// Watch, when false, keeps the hooks from starting `plan watch` at the start of a turn; by
	// default (unset, true) they start it when it does not run, so their checkpoints cost what
	// changed.
	Watch *bool `yaml:"watch,omitempty"`
}

// Validate configures `plan validate` and `checkpoint create --validate`.
type Validate struct {
	// Command is the check run in the workspace root by /bin/sh -c (the tests, say).
	Command string `yaml:"command,omitempty"`
}

// Retention is the checkpoint and archive retention policy (see maintenance.Settings).
type Retention struct {
	Keep *int `yaml:"keep,omitempty"`
	// KeepHourly … KeepMonthly are calendar retention (restic's forget --keep-hourly …).
	KeepHourly  *int      `yaml:"keep_hourly,omitempty"`
	KeepDaily   *int      `yaml:"keep_daily,omitempty"`
	KeepWeekly  *int      `yaml:"keep_weekly,omitempty"`
	KeepMonthly *int      `yaml:"keep_monthly,omitempty"`
	OlderThan   string    `yaml:"older_than,omitempty"`
	Archives    *Archives `yaml:"archives,omitempty"`
	Classes     []Class   `yaml:"classes,omitempty"`
}

// Archives is the retention rule of correction archives.
type Archives struct {
	Keep      *int   `yaml:"keep,omitempty"`
	OlderThan string `yaml:"older_than,omitempty"`
}

// Class is one retention class.
type Class struct {
	Type      string            `yaml:"type,omitempty"`
	Labels    map[string]string `yaml:"labels,omitempty"`
	OlderThan string            `yaml:"older_than,omitempty"`
	Keep      string            `yaml:"keep,omitempty"`
}

// GC configures the collection of a shared store.
type GC struct {
	// Grace is how long a gc waits between condemning a pack and deleting it (a duration).
	Grace string `yaml:"grace,omitempty"`
}

// Cache configures the local cache of a remote store.
type Cache struct {
	// MaxBytes bounds the packs kept ("2GiB", "500MB", or a number of bytes).
	MaxBytes string `yaml:"max_bytes,omitempty"`
}

// Budget is the disk budget of the workspace's store.
type Budget struct {
	// MaxBytes bounds the store's packs ("10GiB", "500MB", or a number of bytes).
	MaxBytes string `yaml:"max_bytes,omitempty"`
	// WorkspaceMaxBytes bounds, on a shared store, what this workspace's checkpoints reference.
	WorkspaceMaxBytes string `yaml:"workspace_max_bytes,omitempty"`
}

// Path is the configuration file of the workspace whose state directory is state.
func Path(state string) string { return filepath.Join(state, FileName) }

// Load reads the file at path; a missing file is the zero File. A file another user owns or may
// write is refused (fault.ErrConflict) before a byte of it is read: it names a command plan runs
// (validate.command) and where checkpoints go (store, db).
func Load(path string) (File, error) {
	var f File
	b, err := readTrusted(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return f, fault.Invalid("%s: %v", path, err)
	}
	budget, err := storeMapping(&doc)
	if err != nil {
		return f, fault.Invalid("%s: %v", path, err)
	}
	if budget != nil {
		// The store's mapping became its URL alone: decode that (strictly, as every file).
		var out bytes.Buffer
		enc := yaml.NewEncoder(&out)
		if err := enc.Encode(&doc); err != nil {
			return f, fault.Invalid("%s: %v", path, err)
		}
		_ = enc.Close()
		b = out.Bytes()
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return f, fault.Invalid("%s: %v", path, err)
	}
	if err := wholeNumbers(&doc, reflect.TypeFor[File](), ""); err != nil {
		return File{}, fault.Invalid("%s: %v", path, err)
	}
	f.Budget = budget
	return f, nil
}

// readTrusted reads the file at path if it is the user's alone (fsx.Distrust), judged on the file
// it opened, so a rename in between cannot slip another file in. Errors name the path.
func readTrusted(path string) ([]byte, error) {
	fd, err := os.Open(path) // #nosec G304 -- the workspace's own configuration
	if err != nil {
		return nil, err // *fs.PathError: it names the operation and the path
	}
	defer func() { _ = fd.Close() }()
	fi, err := fd.Stat()
	if err == nil {
		if why, remedy := fsx.Distrust(fi); why != "" {
			err = fault.Conflict("%s %s: plan will not read a configuration another user can write, since it names "+
				"commands plan runs as you (validate.command); %s", path, why, remedy)
		}
	}
	if err != nil {
		return nil, err
	}
	return io.ReadAll(fd)
}

// storeMapping turns a `store:` written as a mapping ({url, max_bytes, workspace_max_bytes}) into
// its URL alone, in doc, and returns the budget it held (nil when store is a URL or absent). Any
// other key under store is refused, as everywhere in the file.
func storeMapping(doc *yaml.Node) (*Budget, error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "store" || root.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		m := root.Content[i+1]
		var url string
		budget := &Budget{}
		for j := 0; j+1 < len(m.Content); j += 2 {
			k, v := m.Content[j], m.Content[j+1]
			if v.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: store.%s: want a value, not a %s", v.Line, k.Value, kindName(v))
			}
			switch k.Value {
			case "url":
				url = v.Value
			case "max_bytes":
				budget.MaxBytes = v.Value
			case "workspace_max_bytes":
				budget.WorkspaceMaxBytes = v.Value
			default:
				return nil, fmt.Errorf("line %d: field %s not found in store (url, max_bytes, workspace_max_bytes)", k.Line, k.Value)
			}
		}
		root.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: url}
		return budget, nil
	}
	return nil, nil
}

func kindName(n *yaml.Node) string {
	if n.Kind == yaml.SequenceNode {
		return "list"
	}
	return "mapping"
}

// wholeNumbers refuses any value that is not written as a whole number where the schema (t, the
// Go type n decodes into) has an integer: yaml would take keep: 2.9 (or 1e3) for 2 (or 1000)
// without a word. key is n's dotted path, for the message.
func wholeNumbers(n *yaml.Node, t reflect.Type, key string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.DocumentNode:
		return wholeNumbersIn(n.Content, t, key)
	case n.Kind == yaml.AliasNode:
		return wholeNumbers(n.Alias, t, key)
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		for i := 0; i+1 < len(n.Content); i += 2 {
			name, v := n.Content[i].Value, n.Content[i+1]
			if name == "<<" { // a merge: its mapping (or list of them) fills this struct
				if err := wholeNumbersIn(append([]*yaml.Node{v}, v.Content...), t, key); err != nil {
					return err
				}
			} else if sf, ok := yamlField(t, name); ok {
				if err := wholeNumbers(v, sf.Type, strings.TrimPrefix(key+"."+name, ".")); err != nil {
					return err
				}
			}
		}
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for i, c := range n.Content {
			if err := wholeNumbers(c, t.Elem(), fmt.Sprintf("%s[%d]", key, i)); err != nil {
				return err
			}
		}
	case n.Kind == yaml.ScalarNode && t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64 && n.ShortTag() != "!!int":
		return fmt.Errorf("line %d: %s: want a whole number, not %s", n.Line, key, n.Value)
	}
	return nil
}

// wholeNumbersIn checks each of nodes as a t.
func wholeNumbersIn(nodes []*yaml.Node, t reflect.Type, key string) error {
	for _, c := range nodes {
		if err := wholeNumbers(c, t, key); err != nil {
			return err
		}
	}
	return nil
}

// yamlField is the field of struct type t that the yaml key name fills.
func yamlField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		sf := t.Field(i)
		if tag, _, _ := strings.Cut(sf.Tag.Get("yaml"), ","); tag == name {
			return sf, true
		}
	}
	return reflect.StructField{}, false
}

// Save writes f to path atomically and durably. It refuses a DSN that holds a password.
func Save(path string, f File) error {
	if HasPassword(f.DB) {
		return fault.Invalid("%s: the db DSN holds a credential; it must come from PGPASSWORD, PGPASSFILE or ~/.pgpass", path)
	}
	var doc yaml.Node
	if err := doc.Encode(f); err != nil {
		return err
	}
	if f.Budget != nil && (f.Budget.MaxBytes != "" || f.Budget.WorkspaceMaxBytes != "") {
		storeAsMapping(&doc, f.Store, *f.Budget)
	}
	var b bytes.Buffer
	b.WriteString("# plan's workspace configuration (see docs/config.md). It holds no secret.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	if err := fsx.Replace(path, b.Bytes(), true); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// storeAsMapping writes store as the mapping {url, max_bytes, workspace_max_bytes} in the encoded
// file root (a mapping node), in store's place (after workspace_id when it is not there yet).
func storeAsMapping(root *yaml.Node, url string, b Budget) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, kv := range [][2]string{{"url", url}, {"max_bytes", b.MaxBytes}, {"workspace_max_bytes", b.WorkspaceMaxBytes}} {
		if kv[1] != "" {
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: kv[0]}, &yaml.Node{Kind: yaml.ScalarNode, Value: kv[1]})
		}
	}
	key := &yaml.Node{Kind: yaml.ScalarNode, Value: "store"}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "store" {
			root.Content[i+1] = m
			return
		}
	}
	at := 0
	if len(root.Content) >= 2 && root.Content[0].Value == "workspace_id" {
		at = 2
	}
	root.Content = append(root.Content[:at], append([]*yaml.Node{key, m}, root.Content[at:]...)...)
}

// HasPassword says whether a DSN carries a credential: a password in its userinfo, or a
// password, passfile or sslpassword parameter (see secret.URL).
func HasPassword(dsn string) bool { return secret.Has(dsn) }

// RedactDSN returns dsn without its credentials (what the file records), and whether it had any.
func RedactDSN(dsn string) (string, bool) { return secret.URL(dsn) }

// StoreKind classifies a store URL: "" (private), "file" or "s3"; anything else is invalid.
func StoreKind(store string) (string, error) {
	switch {
	case store == "":
		return "", nil
	case strings.HasPrefix(store, "s3://"):
		u, err := url.Parse(store)
		if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return "", fault.Invalid("store URL %q: want s3://bucket[/prefix]", store)
		}
		return "s3", nil
	case strings.HasPrefix(store, "file://"):
		u, err := url.Parse(store)
		if err != nil || u.Host != "" || !filepath.IsAbs(u.Path) || u.RawQuery != "" || u.User != nil ||
			filepath.Clean(u.Path) != strings.TrimSuffix(u.Path, "/") && u.Path != "/" {
			return "", fault.Invalid("store URL %q: want file:///absolute/path", store)
		}
		return "file", nil
	}
	return "", fault.Invalid("store URL %q: want file:///absolute/path or s3://bucket[/prefix]", store)
}

// FilePath is the directory of a file:// store URL (StoreKind said "file").
func FilePath(store string) string {
	u, _ := url.Parse(store)
	return filepath.Clean(u.Path)
}

// DBKind classifies a DSN: "" (the workspace's .plan/plan.db), "sqlite" or "postgres".
func DBKind(dsn string) (string, error) {
	switch {
	case dsn == "":
		return "", nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		if _, err := url.Parse(dsn); err != nil {
			return "", fault.Invalid("db DSN: %v", redactErr(err))
		}
		return "postgres", nil
	case strings.HasPrefix(dsn, "sqlite://"):
		u, err := url.Parse(dsn)
		if err != nil || u.Host != "" || !filepath.IsAbs(u.Path) {
			return "", fault.Invalid("db DSN %q: want sqlite:///absolute/path", dsn)
		}
		return "sqlite", nil
	}
	return "", fault.Invalid("db DSN: want sqlite:///absolute/path or postgres://user@host:port/database")
}

// redactErr drops what a url.Error repeats of the DSN (it may hold a password).
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// ParseBytes reads a size: a number of bytes, or a number with KB, MB, GB (10^n) or KiB, MiB,
// GiB (2^n).
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	var n int64
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n <= 0 || fmt.Sprint(n) != s || n > (1<<62)/mult {
		return 0, fault.Invalid("size %q: want a positive number of bytes, e.g. 500MB or 2GiB", s)
	}
	return n * mult, nil
}
